#!/usr/bin/env python3
"""An external reward function for swift rlhf --rlhf_type grpo: a math-answer checker.

    swift rlhf --rlhf_type grpo ... --reward_funcs format 'external:python3 scripts/rewards/check_answer.py'

swift starts it once and keeps it running. For each completion it writes one JSON line on stdin: the dataset row's
columns ("solution", ...; "messages" ends with the completion as the assistant's reply), "completion" (the decoded
text) and "completion_tokens". The checker answers one line per completion on stdout, in order: its reward, or null
when it has nothing to say about that row. It must flush after each line. It is logged as rewards/check_answer/mean.
scripts/rewards/answer_server.py serves the same check over HTTP.

This one gives 1.0 when the number inside the completion's <answer>...</answer> equals the row's solution (its last
number, so "\\boxed{12}" and "12 apples" both read 12), else 0.0; null for a row without a solution.
"""
import json
import re
import sys

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def last_number(text):
    found = NUMBER.findall(text.replace(",", ""))
    return float(found[-1]) if found else None


def score(row):
    """The reward of one completion's JSON object: 1.0, 0.0, or None without a solution."""
    if "solution" not in row:
        return None
    match = re.search(r"<answer>(.*?)</answer>", row["completion"], re.DOTALL)
    given = last_number(match.group(1)) if match else None
    gold = last_number(str(row["solution"]))
    return 1.0 if given is not None and gold is not None and abs(given - gold) < 1e-9 else 0.0


if __name__ == "__main__":
    for line in sys.stdin:
        print(json.dumps(score(json.loads(line))), flush=True)

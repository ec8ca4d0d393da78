#!/usr/bin/env bash
# End-to-end: tool calling as ms-swift trains and serves it. Usage: agent_test.sh path/to/swift
#  - swift sft on agent data (a `tools` column as JSON text, OpenAI assistant `tool_calls`) teaches a tiny Qwen3 to
#    call get_weather (hermes, the qwen3 template's agent template); the loss is on the call, not on the prompt;
#  - swift deploy answers the openai client with tools: message.tool_calls (name, JSON arguments), streamed too
#    (the last chunk's delta), tool_choice "none" (no tools in the prompt, no calls parsed) and a named function;
#    an unknown tool_choice name is a 400; the agent loop's next request (assistant tool_calls + a tool message)
#    is accepted;
#  - swift infer on rows with tools writes the call; --agent_template react_en is recorded and used by infer.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json openai
PIDS=()
trap 'for p in "${PIDS[@]:-}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

"$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --seed 3 --output_dir "$TMP/m" \
  >/dev/null 2>&1 || { echo "FAIL export"; exit 1; }
"$PY" - "$TMP" <<'P'
import json, sys
weather = {"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
json.dump(weather, open(f"{sys.argv[1]}/weather.json", "w"))
call = {"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
row = {"tools": json.dumps([weather]), "messages": [{"role": "user", "content": "What's the weather in Paris?"},
                                                   {"role": "assistant", "content": None, "tool_calls": [call]}]}
with open(f"{sys.argv[1]}/agent.jsonl", "w") as f:
    for _ in range(8):
        f.write(json.dumps(row) + "\n")
ask = {"tools": json.dumps([weather]), "messages": [{"role": "user", "content": "What's the weather in Paris?"}]}
open(f"{sys.argv[1]}/ask.jsonl", "w").write(json.dumps(ask) + "\n")
P
export OMP_NUM_THREADS=1
run train 0 "$SWIFT" sft --model "$TMP/m" --train_type full --dataset "$TMP/agent.jsonl" --max_steps 40 \
  --per_device_train_batch_size 4 --learning_rate 5e-3 --lr_scheduler_type constant --logging_steps 10 --save_steps 40 \
  --output_dir "$TMP/run" --add_version false
"$PY" - "$TMP/run/logging.jsonl" <<'P' && ok || bad "the tiny model did not learn the tool call"
import json, sys
rows = [r for r in map(json.loads, open(sys.argv[1])) if "loss" in r]
assert rows[-1]["token_acc"] == 1.0 and rows[-1]["loss"] < 1.0, rows[-1]
P

source "$ROOT/tests/e2e/start_server.sh"
start_server "$TMP/deploy.log" "$TMP/run/checkpoint-40" --max_new_tokens 40 --served_model_name agent
"$PY" - "$PORT" "$TMP/weather.json" <<'P' && ok || bad "deploy's tool calls"
import json, sys
import openai
from openai import OpenAI
client = OpenAI(base_url=f"http://127.0.0.1:{sys.argv[1]}/v1", api_key="none")
weather = json.load(open(sys.argv[2]))
ask = [{"role": "user", "content": "What's the weather in Paris?"}]
r = client.chat.completions.create(model="agent", messages=ask, tools=[weather], temperature=0)
calls = r.choices[0].message.tool_calls
assert calls and calls[0].type == "function" and calls[0].function.name == "get_weather", r
assert json.loads(calls[0].function.arguments) == {"city": "Paris"}, calls
assert calls[0].id.startswith("call_"), calls
# streamed: the calls come with the last chunk
streamed = []
for chunk in client.chat.completions.create(model="agent", messages=ask, tools=[weather], temperature=0, stream=True):
    if chunk.choices and chunk.choices[0].delta.tool_calls:
        streamed += chunk.choices[0].delta.tool_calls
assert len(streamed) == 1 and streamed[0].index == 0 and streamed[0].function.name == "get_weather", streamed
# tool_choice: a named function keeps that tool; "none" drops the tools (and no calls are parsed)
named = client.chat.completions.create(model="agent", messages=ask, tools=[weather], temperature=0,
                                       tool_choice={"type": "function", "function": {"name": "get_weather"}})
assert named.choices[0].message.tool_calls[0].function.name == "get_weather", named
none = client.chat.completions.create(model="agent", messages=ask, tools=[weather], tool_choice="none", temperature=0)
assert none.choices[0].message.tool_calls is None, none
try:
    client.chat.completions.create(model="agent", messages=ask, tools=[weather],
                                   tool_choice={"type": "function", "function": {"name": "get_time"}})
    raise AssertionError("an unknown tool_choice name was accepted")
except openai.BadRequestError as e:
    assert e.body["param"] == "tool_choice", e.body
# the agent loop's next turn: the call and its result go back to the model
follow = ask + [{"role": "assistant", "content": None, "tool_calls": [
    {"id": calls[0].id, "type": "function", "function": {"name": "get_weather", "arguments": calls[0].function.arguments}}]},
    {"role": "tool", "tool_call_id": calls[0].id, "content": "{\"temp\": 21}"}]
after = client.chat.completions.create(model="agent", messages=follow, tools=[weather], temperature=0, max_tokens=4)
assert after.choices[0].message.role == "assistant", after
print("tool calls:", calls[0].function.name, calls[0].function.arguments)
P
kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null

# infer on rows with tools writes the call
run infer 0 "$SWIFT" infer --model "$TMP/run/checkpoint-40" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/r.jsonl" --max_new_tokens 40
grep -q '<tool_call>\\n{\\"name\\": \\"get_weather\\", \\"arguments\\": {\\"city\\": \\"Paris\\"}}' "$TMP/r.jsonl" && ok || { bad "infer did not write the call"; cat "$TMP/r.jsonl"; }
# another agent template: recorded in args.json, used by infer from the checkpoint
run react 0 "$SWIFT" sft --model "$TMP/m" --train_type full --dataset "$TMP/agent.jsonl#4" --max_steps 1 --agent_template react_en \
  --output_dir "$TMP/react" --add_version false
grep -q '"agent_template": "react_en"' "$TMP/react/checkpoint-1/args.json" && ok || bad "args.json lacks the agent template"
run bad_agent 2 "$SWIFT" sft --model "$TMP/m" --dataset "$TMP/agent.jsonl" --agent_template glm4_5 --output_dir "$TMP/x"
has bad_agent "--agent_template glm4_5 is not an agent template swift has" err
run no_agent 3 "$SWIFT" sft --model "$TMP/m" --template chatml --dataset "$TMP/agent.jsonl" --max_steps 1 --output_dir "$TMP/y"
has no_agent "--agent_template" err

finish agent

#!/usr/bin/env python3
"""check_answer.py's math-answer check behind an HTTP endpoint, for swift rlhf --rlhf_type grpo:

    python3 scripts/rewards/answer_server.py --port 8000 &
    swift rlhf --rlhf_type grpo ... --reward_funcs http://127.0.0.1:8000/check_answer

swift POSTs each generation batch as JSON lines (one object per completion, as the external command reads them) and
reads one reward per line back (a JSON array of them works too). The path's last part names the reward in the log
(rewards/check_answer/mean). Python's standard library only.
"""
import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_answer import score  # noqa: E402


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        try:
            answer = "".join(json.dumps(score(json.loads(line))) + "\n" for line in body.splitlines() if line.strip())
            status = 200
        except (ValueError, KeyError) as e:
            answer, status = f"bad request: {e}\n", 400
        data = answer.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()

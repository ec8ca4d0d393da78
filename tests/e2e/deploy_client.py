"""HTTP client half of tests/e2e/deploy_test.sh: checks every route of a running `swift deploy` with the standard
library only (http.client, threads). Prints FAIL lines and exits non-zero on any failure."""
import argparse
import concurrent.futures
import http.client
import json
import os
import signal
import socket
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--pid", type=int, required=True)
ap.add_argument("--log", required=True)
ap.add_argument("--small_port", type=int, required=True)
ap.add_argument("--lora_port", type=int, required=True)
args = ap.parse_args()

KEY = {"Authorization": "Bearer secret"}
failures = []
checks = 0


def check(name, cond, detail=""):
    global checks
    checks += 1
    if not cond:
        failures.append(name)
        print(f"FAIL {name}: {detail}"[:2000])


def request(method, path, body=None, headers=KEY, port=None, raw=None):
    conn = http.client.HTTPConnection("127.0.0.1", port or args.port, timeout=120)
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    h = {"Content-Type": "application/json", **(headers or {})}
    conn.request(method, path, body=data, headers=h)
    r = conn.getresponse()
    text = r.read().decode()
    conn.close()
    try:
        return r.status, json.loads(text) if text else None, r.getheader("Content-Type")
    except json.JSONDecodeError:
        return r.status, text, r.getheader("Content-Type")


def post(path, body, **kw):
    return request("POST", path, body, **kw)


def stream(path, body):
    """SSE: returns the list of decoded chunks (without [DONE]) and whether [DONE] came last."""
    conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=120)
    conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json", **KEY})
    r = conn.getresponse()
    assert r.status == 200, (r.status, r.read())
    assert r.getheader("Content-Type").startswith("text/event-stream")
    chunks, done = [], False
    for line in r.read().decode().split("\n"):
        if not line.startswith("data: "):
            continue
        payload = line[len("data: "):]
        if payload == "[DONE]":
            done = True
        else:
            chunks.append(json.loads(payload))
    conn.close()
    return chunks, done


def error_of(status, body, want_status, param=None, code=None, name=""):
    ok = status == want_status and isinstance(body, dict) and "error" in body
    ok = ok and all(k in body["error"] for k in ("message", "type", "param", "code"))
    if ok and param is not None:
        ok = body["error"]["param"] == param
    if ok and code is not None:
        ok = body["error"]["code"] == code
    check(name, ok, f"{status} {body}")


CHAT = "/v1/chat/completions"
CMPL = "/v1/completions"
hello = [{"role": "user", "content": "hello"}]

# --- health, models, auth
status, _, _ = request("GET", "/health", headers={})
check("health", status == 200, status)
status, body, _ = request("GET", "/v1/models")
check("models", status == 200 and body["object"] == "list" and [m["id"] for m in body["data"]] == ["tiny", "a1", "a2"]
      and body["data"][0]["max_model_len"] > 0 and body["data"][1]["parent"] == "tiny", body)
error_of(*request("GET", "/v1/models", headers={})[:2], 401, name="auth missing")
error_of(*post(CHAT, {"messages": hello}, headers={"Authorization": "Bearer wrong"})[:2], 401, name="auth wrong")

# --- chat, not streamed
status, chat, _ = post(CHAT, {"model": "tiny", "messages": hello, "max_tokens": 6, "return_details": True})
check("chat status", status == 200, chat)
choice = chat["choices"][0]
check("chat shape", chat["object"] == "chat.completion" and chat["id"].startswith("chatcmpl-")
      and choice["message"]["role"] == "assistant" and isinstance(choice["message"]["content"], str)
      and choice["finish_reason"] in ("stop", "length"), chat)
u = chat["usage"]
check("chat usage", u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"] and 1 <= u["completion_tokens"] <= 6
      and u["prompt_tokens"] == len(chat["prompt_token_ids"]), u)
check("chat token_ids", len(choice["token_ids"]) <= 6, choice)

# --- chat, streamed: same greedy text, role first, finish_reason last, [DONE]
chunks, done = stream(CHAT, {"messages": hello, "max_tokens": 6, "stream": True,
                             "stream_options": {"include_usage": True}})
check("chat stream done", done)
check("chat stream role", chunks[0]["choices"][0]["delta"].get("role") == "assistant", chunks[0])
text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
check("chat stream text", text == choice["message"]["content"], (text, choice["message"]["content"]))
finals = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
check("chat stream finish", finals == [choice["finish_reason"]], finals)
check("chat stream usage", chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == u["completion_tokens"],
      chunks[-1])
check("chat stream object", all(c["object"] == "chat.completion.chunk" for c in chunks), chunks[0])
check("chat stream usage null until the last", all("usage" in c and c["usage"] is None for c in chunks[:-1]), chunks[0])

# --- chat logprobs
status, body, _ = post(CHAT, {"messages": hello, "max_tokens": 4, "logprobs": True, "top_logprobs": 3})
lp = body["choices"][0]["logprobs"]["content"]
check("chat logprobs", status == 200 and len(lp) >= 1 and all(len(t["top_logprobs"]) == 3 and t["logprob"] <= 0 for t in lp)
      and lp[0]["top_logprobs"][0]["logprob"] >= lp[0]["logprob"] - 1e-6, body)

# --- enable_thinking changes the qwen3 prompt
p_on = post(CHAT, {"messages": hello, "max_tokens": 1, "chat_template_kwargs": {"enable_thinking": True}})[1]
p_off = post(CHAT, {"messages": hello, "max_tokens": 1, "chat_template_kwargs": {"enable_thinking": False}})[1]
check("enable_thinking", p_on["usage"]["prompt_tokens"] != p_off["usage"]["prompt_tokens"], (p_on["usage"], p_off["usage"]))

# --- completions: string, strings, ids, list of id lists, n, echo, logprobs, prompt_logprobs
status, c1, _ = post(CMPL, {"prompt": "Once upon a time", "max_tokens": 5, "return_details": True})
check("cmpl string", status == 200 and c1["object"] == "text_completion" and len(c1["choices"]) == 1, c1)
ids = c1["choices"][0]["prompt_token_ids"]
status, c2, _ = post(CMPL, {"prompt": ids, "max_tokens": 5, "return_details": True})
check("cmpl ids equal text", status == 200 and c2["choices"][0]["text"] == c1["choices"][0]["text"]
      and c2["choices"][0]["token_ids"] == c1["choices"][0]["token_ids"], (c1, c2))
status, c3, _ = post(CMPL, {"prompt": [[1, 2, 3], [4, 5], ids], "max_tokens": 5, "n": 2})
check("cmpl id lists", status == 200 and [c["index"] for c in c3["choices"]] == list(range(6))
      and c3["choices"][4]["text"] == c1["choices"][0]["text"], c3)
check("cmpl usage", c3["usage"]["prompt_tokens"] == 3 + 2 + len(ids), c3["usage"])
status, c4, _ = post(CMPL, {"prompt": ["a b", "c d e"], "max_tokens": 3})
check("cmpl strings", status == 200 and len(c4["choices"]) == 2, c4)
status, c5, _ = post(CMPL, {"prompt": "Once upon a time", "max_tokens": 5, "echo": True, "logprobs": 2})
lps = c5["choices"][0]["logprobs"]
check("cmpl echo", c5["choices"][0]["text"] == "Once upon a time" + c1["choices"][0]["text"], c5)
check("cmpl echo logprobs", lps["token_logprobs"][0] is None and len(lps["tokens"]) == len(ids) + len(c1["choices"][0]["token_ids"])
      and all(t is None or len(t) >= 1 for t in lps["top_logprobs"]), lps)
# streamed completion logprobs: text_offset continues across chunks and equals the non-streamed one
chunks, done = stream(CMPL, {"prompt": "Once upon a time", "max_tokens": 5, "logprobs": 1, "stream": True})
streamed_offsets = [o for c in chunks if c["choices"] and c["choices"][0]["logprobs"]
                    for o in c["choices"][0]["logprobs"]["text_offset"]]
status, c7, _ = post(CMPL, {"prompt": "Once upon a time", "max_tokens": 5, "logprobs": 1})
check("cmpl stream text_offset", done and len(streamed_offsets) >= 2
      and streamed_offsets == c7["choices"][0]["logprobs"]["text_offset"], (streamed_offsets, c7["choices"][0]["logprobs"]))
status, c6, _ = post(CMPL, {"prompt": ids, "max_tokens": 2, "prompt_logprobs": 2})
pl = c6["choices"][0]["prompt_logprobs"]
check("prompt_logprobs", pl[0] is None and len(pl) == len(ids)
      and all(str(ids[i]) in pl[i] and 2 <= len(pl[i]) <= 3 for i in range(1, len(ids))), pl)
chunks, done = stream(CMPL, {"prompt": ids, "max_tokens": 5, "stream": True})
check("cmpl stream", done and "".join(c["choices"][0]["text"] for c in chunks) == c1["choices"][0]["text"], chunks)

# --- a conversation that ends with an assistant message: continued by default (ms-swift) and with vLLM's
# continue_final_message, greedy, as /v1/completions continues the same prompt text; add_generation_prompt true
# closes it and opens a new reply instead.
partial = [{"role": "user", "content": "Count to three."}, {"role": "assistant", "content": "One, two,"}]
no_think = {"chat_template_kwargs": {"enable_thinking": False}, "max_tokens": 6, "temperature": 0}
head = "<|im_start|>user\nCount to three.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nOne, two,"
for name, extra, prompt in (
        ("continued by default", {}, head),
        ("continue_final_message", {"continue_final_message": True, "add_generation_prompt": False}, head),
        ("add_generation_prompt", {"add_generation_prompt": True},
         head + "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")):
    want = post(CMPL, {"prompt": prompt, "max_tokens": 6, "temperature": 0})[1]["choices"][0]["text"]
    status, got, _ = post(CHAT, {"messages": partial, **no_think, **extra})
    check(f"final assistant message: {name}", status == 200 and got["choices"][0]["message"]["content"] == want,
          (status, want, got))
status, body, _ = post(CHAT, {"messages": partial[:1], "continue_final_message": True, **no_think})
error_of(status, body, 400, "continue_final_message", name="continue_final_message without a final assistant message")

# --- stop strings cut the text (streamed and not)
full = post(CMPL, {"prompt": ids, "max_tokens": 12})[1]["choices"][0]["text"]
check("12 tokens give text to cut", len(full) >= 6, full)  # the model and prompt are fixed: this is stable
if len(full) >= 6:
    stop = full[3:5]
    want = full[:full.find(stop)]
    got = post(CMPL, {"prompt": ids, "max_tokens": 12, "stop": [stop]})[1]["choices"][0]
    check("stop string", got["text"] == want and got["finish_reason"] == "stop", (full, stop, got))
    chunks, _ = stream(CMPL, {"prompt": ids, "max_tokens": 12, "stop": stop, "stream": True})
    check("stop string streamed", "".join(c["choices"][0]["text"] for c in chunks) == want, chunks)

# --- seeded sampling repeats; n choices differ in index only
sample = {"prompt": ids, "max_tokens": 8, "temperature": 1.5, "top_k": 50, "top_p": 0.95, "min_p": 0.01,
          "repetition_penalty": 1.1, "seed": 3}
a, b = post(CMPL, sample)[1], post(CMPL, sample)[1]
check("seeded sampling", [c["text"] for c in a["choices"]] == [c["text"] for c in b["choices"]], (a, b))

# --- errors
error_of(*post(CHAT, None, raw="{not json")[:2], 400, name="bad json")
error_of(*post(CHAT, None, raw="[1, 2]")[:2], 400, name="not an object")
error_of(*post(CHAT, {"model": "gpt-4", "messages": hello})[:2], 400, "model", "model_not_found", name="unknown model")
error_of(*post(CHAT, {"messages": hello, "temperature": -1})[:2], 400, "temperature", name="temperature range")
error_of(*post(CHAT, {"messages": hello, "top_p": 1.5})[:2], 400, "top_p", name="top_p range")
error_of(*post(CHAT, {"messages": hello, "n": 0})[:2], 400, "n", name="n range")
error_of(*post(CHAT, {"messages": hello, "max_tokens": 0})[:2], 400, "max_tokens", name="max_tokens range")
error_of(*post(CHAT, {"messages": hello, "logprobs": True, "top_logprobs": 21})[:2], 400, "top_logprobs", name="max_logprobs")
error_of(*post(CMPL, {"prompt": "x", "logprobs": 50})[:2], 400, "logprobs", name="cmpl logprobs range")
error_of(*post(CHAT, {"max_tokens": 3})[:2], 400, "messages", name="no messages")
error_of(*post(CHAT, {"messages": [{"role": "robot", "content": "x"}]})[:2], 400, name="bad role")
error_of(*post(CMPL, {"max_tokens": 3})[:2], 400, "prompt", name="no prompt")
error_of(*post(CMPL, {"prompt": [1, "a"]})[:2], 400, "prompt", name="mixed prompt")
error_of(*post(CMPL, {"prompt": [10 ** 9]})[:2], 400, "prompt", name="token outside vocab")
error_of(*post(CMPL, {"prompt": "hello " * 5000})[:2], 400, "prompt", "context_length_exceeded", name="prompt too long")
ctx = request("GET", "/v1/models")[1]["data"][0]["max_model_len"]
error_of(*post(CMPL, {"prompt": ids, "max_tokens": ctx})[:2], 400, "max_tokens", "context_length_exceeded",
         name="max_tokens past context")
error_of(*request("GET", "/v1/nothing")[:2], 404, name="unknown route")
error_of(*request("GET", CHAT)[:2], 405, code="method_not_allowed", name="wrong method")
for junk in ["null", "{}", '{"messages": 5}', '{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}',
             '{"prompt": [[]]}', '{"prompt": [], "n": 1}', '{"prompt": "x", "n": 100000}', '{"prompt": "x", "stop": 3}',
             '{"prompt": "x", "max_tokens": "many"}', '{"messages": [{"role": "system", "content": "x"}]}']:
    status, body, _ = post(CMPL if "prompt" in junk else CHAT, None, raw=junk)
    check(f"junk {junk}", status == 400 and "error" in body, (status, body))
error_of(*post(CMPL, {"prompt": "x", "max_tokens": 2 ** 63 - 1})[:2], 400, "max_tokens", name="huge max_tokens")
error_of(*post(CMPL, {"prompt": "x", "max_tokens": 1e30})[:2], 400, "max_tokens", name="float max_tokens")
# A number beyond a double is not a server error (it was HTTP 500).
error_of(*post(CHAT, None, raw='{"messages": [{"role": "user", "content": "x"}], "max_tokens": 1e999}')[:2], 400,
         name="max_tokens 1e999")
# A temperature too small to divide by is greedy (as vLLM: below 1e-5), not NaN probabilities.
status, body, _ = post(CMPL, {"prompt": "x", "max_tokens": 3, "temperature": 1e-300, "n": 2})
greedy_x = post(CMPL, {"prompt": "x", "max_tokens": 3, "temperature": 0})[1]["choices"][0]["text"]
check("tiny temperature is greedy", status == 200 and [c["text"] for c in body["choices"]] == [greedy_x] * 2,
      (status, body, greedy_x))
check("alive after junk", request("GET", "/health", headers={})[0] == 200)

# --- more sequences than the whole queue holds (server with --max_waiting 1, a request for 2) can never be served:
#     400 naming n, not a 429 that invites retrying forever.
error_of(*post(CMPL, {"prompt": "x", "n": 2}, headers={}, port=args.small_port)[:2], 400, param="n", name="more than the queue")

# --- a queue filled by other requests: one running (--max_batch_size 1), one waiting (--max_waiting 1); the
#     third gets 429 and the first two still finish.
def open_stream(port, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", CMPL, body=json.dumps({**body, "stream": True}), headers={"Content-Type": "application/json"})
    return conn


running = open_stream(args.small_port, {"prompt": ids, "max_tokens": 400})
first = running.getresponse()
first.readline()  # the first chunk: it is generating
waiting = open_stream(args.small_port, {"prompt": ids, "max_tokens": 4})
time.sleep(0.5)  # its request is read and queued behind the running one
status, body, _ = post(CMPL, {"prompt": ids, "max_tokens": 4}, headers={}, port=args.small_port)
check("full queue: 429", status == 429 and body["error"]["code"] == "rate_limit_exceeded"
      if isinstance(body, dict) and "error" in body else False, (status, body))
check("full queue: the running request finishes", first.read().decode().rstrip().endswith("data: [DONE]"))
check("full queue: the waiting request finishes", waiting.getresponse().read().decode().rstrip().endswith("data: [DONE]"))
check("after a full queue: served again", post(CMPL, {"prompt": ids, "max_tokens": 2}, headers={}, port=args.small_port)[0] == 200)
check("small server works", post(CMPL, {"prompt": "x"}, headers={}, port=args.small_port)[0] == 200)

# --- 32 concurrent greedy requests, each equal to the same request served alone
def job(i):
    if i % 2:
        return CHAT, {"messages": [{"role": "user", "content": f"question {i}: " + "why " * (i % 7)}],
                      "max_tokens": 8 + i % 5, "return_details": True}
    return CMPL, {"prompt": [(7 * i + k) % 151000 for k in range(3 + (5 * i) % 23)], "max_tokens": 8 + i % 5,
                  "return_details": True}


def run(i):
    path, body = job(i)
    status, out, _ = post(path, body)
    assert status == 200, out
    return out["choices"][0]["token_ids"]


alone = [run(i) for i in range(32)]
with concurrent.futures.ThreadPoolExecutor(32) as pool:
    together = list(pool.map(run, range(32)))
same = sum(a == b for a, b in zip(alone, together))
check("32 concurrent equal alone", same == 32, f"{same}/32 equal")

# --- multi-LoRA: model "a1" equals a server of base + that adapter; adapters and base mix in one batch
def lora_job(i):
    model = ["tiny", "a1", "a2"][i % 3]
    return model, {"model": model, "prompt": [(11 * i + k) % 5000 + 100 for k in range(4 + i % 9)], "max_tokens": 8,
                   "return_details": True}


def lora_run(i):
    status, out, _ = post(CMPL, lora_job(i)[1])
    assert status == 200, out
    return out["choices"][0]["token_ids"]


alone = [lora_run(i) for i in range(12)]
with concurrent.futures.ThreadPoolExecutor(12) as pool:
    together = list(pool.map(lora_run, range(12)))
check("multi-lora concurrent equal alone", alone == together, (alone, together))
single = []
for i in range(12):
    body = dict(lora_job(i)[1])
    del body["model"]
    single.append(post(CMPL, body, headers={}, port=args.lora_port)[1]["choices"][0]["token_ids"])
check("a1 equals base + adapter", all(alone[i] == single[i] for i in range(12) if i % 3 == 1), (alone, single))
check("adapters change the output", any(alone[i] != single[i] for i in range(12) if i % 3 != 1), (alone, single))
check("chat with an adapter", post(CHAT, {"model": "a2", "messages": hello, "max_tokens": 3})[1]["model"] == "a2")

# --- a client that disconnects mid-stream is cancelled; the server carries on
s = socket.create_connection(("127.0.0.1", args.port))
body = json.dumps({"prompt": ids, "max_tokens": 3000, "stream": True})
s.sendall((f"POST {CMPL} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
s.recv(4096)
s.close()
for _ in range(100):
    if "cancelled" in open(args.log).read():
        break
    time.sleep(0.1)
check("disconnect cancels", "cancelled" in open(args.log).read())
check("alive after disconnect", post(CMPL, {"prompt": ids, "max_tokens": 2})[0] == 200)

# --- the same for a non-streamed request: nothing is written before the answer, the server notices anyway
s = socket.create_connection(("127.0.0.1", args.port))
body = json.dumps({"prompt": ids, "max_tokens": 3000})
s.sendall((f"POST {CMPL} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
time.sleep(0.5)
s.close()
for _ in range(100):
    if "went away before its answer" in open(args.log).read():
        break
    time.sleep(0.1)
check("non-streamed disconnect cancels", "went away before its answer" in open(args.log).read())
check("alive after non-streamed disconnect", post(CMPL, {"prompt": ids, "max_tokens": 2})[0] == 200)

# --- SIGTERM: an in-flight streamed request still completes, then the server exits (checked by the shell)
conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=120)
conn.request("POST", CMPL, body=json.dumps({"prompt": ids, "max_tokens": 200, "stream": True}),
             headers={"Content-Type": "application/json", **KEY})
r = conn.getresponse()
first = r.readline()
os.kill(args.pid, signal.SIGTERM)
rest = r.read().decode()
check("graceful shutdown finishes in-flight", first.startswith(b"data: ") and rest.rstrip().endswith("data: [DONE]"),
      rest[-200:])

print(f"deploy client: {checks - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)

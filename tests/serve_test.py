#!/usr/bin/env python3
"""`staticlm serve` end to end with a real HTTP client (curl) against 127.0.0.1.

Starts the server on a free port (--port 0, the bound port read back from its first line), then
checks: completions and chat completions, streamed (server-sent events) and not, equal the CLI's
greedy text for the same prompt (the CLI is run here, nothing is hard-coded); concurrent
requests up to --sessions succeed; one more while all are busy gets 503 with Retry-After;
malformed JSON, mistyped fields and a prompt over the context get 400 with a message; a client that goes away
mid-stream gives its session back; /health answers after every bad request and reports no heap allocation on the generation path.

usage: serve_test.py STATICLM_CLI MODEL
"""
import json
import subprocess
import sys
import threading
import time

SESSIONS = 2
CTX = 256
PROMPT = "The capital of France is"
QUESTION = "Name a colour."
TOKENS = 6


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def curl(port, method, path, body=None):
    """(status, headers dict, body text) of one request made with curl."""
    cmd = ["curl", "-sS", "-i", "-N", "-X", method, "http://127.0.0.1:%d%s" % (port, path)]
    if body is not None:
        cmd += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
    out = subprocess.run(cmd, input=(body or "").encode(), stdout=subprocess.PIPE, check=True,
                         timeout=120).stdout.decode()
    head, _, text = out.partition("\r\n\r\n")
    lines = head.split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    return status, headers, text


def post(port, path, payload):
    return curl(port, "POST", path, json.dumps(payload))


def sse_text(body, chat):
    """The text of a streamed answer, checking the event framing on the way."""
    events = [l[len("data: "):] for l in body.split("\n") if l.startswith("data: ")]
    check(events and events[-1] == "[DONE]", "the stream does not end with data: [DONE]: %r" % body)
    chunks = [json.loads(e) for e in events[:-1]]
    check(chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length"),
          "the last chunk has no finish_reason")
    if chat:
        return "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    return "".join(c["choices"][0]["text"] for c in chunks)


def cli_text(cli, model, chat, prompt):
    cmd = [cli, "run", "--model", model, "--ctx", str(CTX), "--temperature", "0",
           "--max-tokens", str(TOKENS), "--prompt", prompt, "--json"]
    if chat:
        cmd.append("--chat")
    out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, timeout=120).stdout
    return json.loads(out)["text"]


def healthy(port, after):
    status, _, body = curl(port, "GET", "/health")
    check(status == 200, "/health answered %d after %s" % (status, after))
    return json.loads(body)


def check_answers(port, cli, model):
    for chat in (False, True):
        want = cli_text(cli, model, chat, QUESTION if chat else PROMPT)
        check(want != "", "the CLI generated no text")
        if chat:
            path, payload = "/v1/chat/completions", {"messages": [{"role": "user", "content": QUESTION}]}
        else:
            path, payload = "/v1/completions", {"prompt": PROMPT}
        payload.update(max_tokens=TOKENS, temperature=0)
        status, _, body = post(port, path, payload)
        check(status == 200, "%s answered %d: %s" % (path, status, body))
        choice = json.loads(body)["choices"][0]
        got = choice["message"]["content"] if chat else choice["text"]
        check(got == want, "%s: %r, the CLI says %r" % (path, got, want))
        status, headers, body = post(port, path, dict(payload, stream=True))
        check(status == 200 and headers.get("content-type", "").startswith("text/event-stream"),
              "streamed %s answered %d %r" % (path, status, headers))
        got = sse_text(body, chat)
        check(got == want, "streamed %s: %r, the CLI says %r" % (path, got, want))
        print("ok: %s equals the CLI's greedy text %r (streamed and not)" % (path, want))
    return want


def check_openai_client(port, want):
    """The README's openai client example, where the package is installed (pip install openai)."""
    try:
        from openai import OpenAI
    except ImportError:
        print("skipped: the openai package is not installed (curl covered the same requests)")
        return
    client = OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key="none")
    request = dict(model="staticlm", temperature=0, max_tokens=TOKENS,
                   messages=[{"role": "user", "content": QUESTION}])
    got = client.chat.completions.create(**request).choices[0].message.content
    check(got == want, "openai client: %r, the CLI says %r" % (got, want))
    got = "".join(c.choices[0].delta.content or ""
                  for c in client.chat.completions.create(stream=True, **request))
    check(got == want, "openai client, streamed: %r, the CLI says %r" % (got, want))
    print("ok: the openai client's answers equal the CLI's (streamed and not)")


def check_prefix_reuse(port, answer):
    messages = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": answer},
                {"role": "user", "content": "Another one."}]
    status, _, body = post(port, "/v1/chat/completions",
                           {"messages": messages, "max_tokens": 2, "temperature": 0})
    check(status == 200, "the second turn answered %d: %s" % (status, body))
    usage = json.loads(body)["usage"]
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    check(0 < cached < usage["prompt_tokens"], "the second turn reused no prefix: %r" % usage)
    print("ok: the second turn reused %d of %d prompt tokens" % (cached, usage["prompt_tokens"]))


def check_concurrency(port):
    results = [None] * SESSIONS
    def one(i):
        results[i] = post(port, "/v1/completions", {"prompt": PROMPT, "max_tokens": TOKENS,
                                                    "temperature": 0})
    threads = [threading.Thread(target=one, args=(i,)) for i in range(SESSIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    texts = set()
    for status, _, body in results:
        check(status == 200, "a concurrent request answered %d: %s" % (status, body))
        texts.add(json.loads(body)["choices"][0]["text"])
    check(len(texts) == 1, "concurrent greedy answers differ: %r" % texts)
    print("ok: %d concurrent requests succeeded" % SESSIONS)


def check_busy(port):
    """Holds every session with a long stream, then one more request must get 503."""
    # Greedy text of this prompt runs past 240 tokens without an end token (seconds), so the
    # holding streams are still generating when the extra request comes.
    streams = []
    for _ in range(SESSIONS):
        p = subprocess.Popen(
            ["curl", "-sS", "-N", "-H", "Content-Type: application/json", "--data-binary",
             json.dumps({"prompt": "Once upon a time", "max_tokens": 240, "temperature": 0,
                        "stream": True}),
             "http://127.0.0.1:%d/v1/completions" % port], stdout=subprocess.PIPE)
        first = p.stdout.readline().decode()  # the first event: the session is generating
        check(first.startswith("data: {"), "a holding stream began with %r" % first)
        streams.append(p)
    status, headers, body = post(port, "/v1/completions", {"prompt": PROMPT, "max_tokens": 2})
    check(status == 503, "request %d of %d sessions answered %d: %s" % (SESSIONS + 1, SESSIONS,
                                                                       status, body))
    check(headers.get("retry-after", "") != "", "the 503 has no Retry-After")
    check("busy" in json.loads(body)["error"]["message"], "the 503 says nothing: " + body)
    for p in streams:
        rest = p.stdout.read().decode()
        check(p.wait() == 0 and rest.rstrip().endswith("data: [DONE]"), "a holding stream broke")
    healthy(port, "a 503")
    print("ok: request %d got 503 with Retry-After" % (SESSIONS + 1))


def check_disconnect(port):
    """A client that goes away mid-stream: the server stays up and the session comes back."""
    p = subprocess.Popen(
        ["curl", "-sS", "-N", "-H", "Content-Type: application/json", "--data-binary",
         json.dumps({"prompt": "Once upon a time", "max_tokens": 240, "stream": True}),
         "http://127.0.0.1:%d/v1/completions" % port], stdout=subprocess.PIPE)
    check(p.stdout.readline().startswith(b"data: {"), "the stream did not start")
    p.kill()
    p.wait()
    start = time.time()
    while healthy(port, "a client went away")["busy"] != 0:
        check(time.time() - start < 60, "the session of a gone client was not given back")
        time.sleep(0.05)
    print("ok: a gone client's session came back after %.2f s" % (time.time() - start))


def check_bad_requests(port):
    cases = [
        ("malformed JSON", "/v1/chat/completions", '{"messages": [', "JSON"),
        ("no messages", "/v1/chat/completions", '{"prompt": "x"}', "messages"),
        ("a prompt over the context", "/v1/completions",
         json.dumps({"prompt": "hello " * (2 * CTX), "max_tokens": 2}), "context"),
        ("a chat over the context", "/v1/chat/completions",
         json.dumps({"messages": [{"role": "user", "content": "hello " * (2 * CTX)}]}), "context"),
        ("max_tokens over the cap", "/v1/completions", '{"prompt": "x", "max_tokens": 100000}',
         "max_tokens"),
        # Mistyped fields: nlohmann's readers throw on them, which once gave a bare 500.
        ("a content part whose type is a number", "/v1/chat/completions",
         '{"messages": [{"role": "user", "content": [{"type": 5, "text": "x"}]}]}', "content"),
        ("a role that is not a string", "/v1/chat/completions",
         '{"messages": [{"role": ["user"], "content": "x"}]}', "role"),
        ("a prompt that is not a string", "/v1/completions", '{"prompt": 7}', "prompt"),
        ("a stream flag that is not a boolean", "/v1/completions",
         '{"prompt": "x", "stream": "yes"}', "stream"),
    ]
    for name, path, body, word in cases:
        status, _, text = curl(port, "POST", path, body)
        check(status == 400, "%s answered %d: %s" % (name, status, text))
        message = json.loads(text)["error"]["message"]
        check(word in message, "%s: the message %r does not mention %s" % (name, message, word))
        healthy(port, name)
        print("ok: %s got 400 (%s) and the server still answers" % (name, message))


def main():
    cli, model = sys.argv[1], sys.argv[2]
    server = subprocess.Popen([cli, "serve", "--model", model, "--port", "0", "--sessions",
                               str(SESSIONS), "--ctx", str(CTX), "--max-tokens", "256"],
                              stdout=subprocess.PIPE)
    try:
        line = server.stdout.readline().decode()
        check("listening on http://127.0.0.1:" in line, "the server printed %r" % line)
        port = int(line.split("127.0.0.1:")[1].split()[0])
        status, _, body = curl(port, "GET", "/v1/models")
        check(status == 200 and json.loads(body)["data"][0]["id"] in model, "/v1/models: " + body)
        answer = check_answers(port, cli, model)
        check_openai_client(port, answer)
        check_prefix_reuse(port, answer)
        check_concurrency(port)
        check_busy(port)
        check_disconnect(port)
        check_bad_requests(port)
        health = healthy(port, "everything")
        check(health["busy"] == 0, "sessions still busy: %r" % health)
        if health["heap_allocs_after_init"] >= 0:  # -1: counting unavailable (sanitizers)
            check(health["heap_allocs_after_init"] == 0,
                  "the generation path allocated: %r" % health)
        print("ok: /health %r" % health)
    finally:
        server.terminate()
        code = server.wait(timeout=30)
    check(code == 0, "the server exited with %d after SIGTERM" % code)
    print("PASS")


if __name__ == "__main__":
    main()

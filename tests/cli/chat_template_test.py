#!/usr/bin/python3
"""`pagoda template` against Python's jinja2, both run here and now (not only against the stored renderings).

For every template in ../shared/templates x every conversation x add_generation_prompt, renders the conversation
with jinja2 set up as transformers' apply_chat_template sets it up (../shared/templates/render.py's environment,
imported, not copied) and with `pagoda template --chat-template-file`, giving both the same variables: bos_token /
eos_token from the model's vocabulary unless the manifest names the family's own, and the conversation's template
kwargs (passed to pagoda as --chat-template-kwargs). Where jinja2 renders, pagoda must print the same bytes; where
jinja2 raises, pagoda must fail (with the template's own text for raise_exception).

Then the choices around the template: a model without tokenizer.chat_template gets built-in chatml; bad flags and
bad message files get one clear error line.

Usage: chat_template_test.py PAGODA SHARED_DIR
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

pagoda, shared = sys.argv[1], sys.argv[2]
model = os.path.join(shared, "models", "stories260K.gguf")
tdir = os.path.join(shared, "templates")

try:
    spec = importlib.util.spec_from_file_location("render", os.path.join(tdir, "render.py"))
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)  # defines the environment; main() is not run (it writes into shared/)
except ImportError as e:
    print(f"chat_template_test: python3-jinja2 is missing ({e}); install the packages in scripts/apt-packages.txt")
    sys.exit(1)

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        if failed <= 20:
            print("FAIL:", what)


def run(args, stdin=None):
    p = subprocess.run([pagoda, *args], input=stdin, capture_output=True, timeout=60)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


# The model's BOS / EOS texts, as pagoda gives them to templates.
model_tokens = {"bos_token": "<s>", "eos_token": "</s>"}

manifest = json.load(open(os.path.join(tdir, "manifest.json"), encoding="utf-8"))
convs = json.load(open(os.path.join(tdir, "conversations.json"), encoding="utf-8"))["conversations"]
env = render.make_env()
compared = 0
with tempfile.TemporaryDirectory() as tmp:
    for conv in convs:
        with open(os.path.join(tmp, conv["id"] + ".json"), "w", encoding="utf-8") as f:
            json.dump({"messages": conv["messages"], **({"tools": conv["tools"]} if "tools" in conv else {})}, f,
                      ensure_ascii=False)
    for m in sorted(manifest, key=lambda m: m["family"]):
        path = os.path.join(tdir, m["file"])
        source = open(path, encoding="utf-8").read()
        try:
            tmpl, compile_error = env.from_string(source), None
        except Exception as e:  # noqa: BLE001 - syntax errors are cases too
            tmpl, compile_error = None, e
        family_tokens = {k: m[k] for k in ("bos_token", "eos_token") if m.get(k) is not None}
        for conv in convs:
            kwargs = dict(family_tokens)
            kwargs.update(conv.get("template_kwargs", {}))
            variables = dict(model_tokens)
            variables.update(kwargs)
            for agp in (False, True):
                where = f"{m['family']} / {conv['id']}" + (" / add_generation_prompt" if agp else "")
                try:
                    if compile_error is not None:
                        raise compile_error
                    want = tmpl.render(messages=conv["messages"], tools=conv.get("tools"), documents=None,
                                       add_generation_prompt=agp, **variables).encode("utf-8")
                    want_error = None
                except Exception as e:  # noqa: BLE001
                    want, want_error = None, e
                args = ["template", model, "--messages", os.path.join(tmp, conv["id"] + ".json"),
                        "--chat-template-file", path, "--chat-template-kwargs", json.dumps(kwargs),
                        "--now", "2025-01-15T10:30:00"]
                if not agp:
                    args.append("--no-generation-prompt")
                rc, out, err = run(args)
                compared += 1
                if want_error is None:
                    check(rc == 0 and out == want,
                          f"{where}: rc {rc}, {err.strip()[:200]!r}; want {want[:120]!r}, got {out[:120]!r}")
                else:
                    ok = rc != 0 and out == b""
                    if ok and type(want_error).__name__ == "TemplateError":
                        ok = str(want_error) in err
                    check(ok, f"{where}: jinja2 raised {type(want_error).__name__}: {want_error}; pagoda rc {rc}, "
                              f"{err.strip()[:200]!r}")

    # The model's own template is the default: stories260K has none, so built-in chatml.
    msgs = os.path.join(tmp, "single_user.json")
    rc, out, err = run(["template", model, "--messages", msgs])
    check(rc == 0 and out == b"<|im_start|>user\nHello! What is the capital of France?<|im_end|>\n"
          b"<|im_start|>assistant\n" and "built-in chatml" in err, f"default template: {rc} {out!r} {err!r}")
    rc, out, err = run(["template", model, "--messages", msgs, "--chat-template", "llama-3"])
    check(rc == 0 and out.startswith(b"<|start_header_id|>user"), f"--chat-template llama-3: {rc} {out!r}")
    # Messages from stdin, as a bare list.
    rc, out, err = run(["template", model, "--messages", "-", "--chat-template-file",
                        os.path.join(tdir, "templates", "chatml-nous-hermes2-mixtral.jinja")],
                       stdin=b'[{"role": "user", "content": "Hi"}]')
    check(rc == 0 and out.endswith(b"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"), f"stdin: {rc} {out!r}")

    # Bad input: one error line naming the problem, exit 1, nothing on stdout.
    bad_tmpl = os.path.join(tmp, "bad.jinja")
    with open(bad_tmpl, "w") as f:
        f.write("{% for m in messages %}{{ m.content }")
    not_json = os.path.join(tmp, "not.json")
    with open(not_json, "w") as f:
        f.write("[{\"role\": ")
    no_role = os.path.join(tmp, "no_role.json")
    with open(no_role, "w") as f:
        f.write('[{"content": "x"}]')
    tools = os.path.join(tmp, "tools.json")
    with open(tools, "w") as f:
        json.dump(convs[4]["tools"], f)
    with open(bad_tmpl.replace("bad", "ok"), "w") as f:
        f.write("{{ tools | length }}")
    cases = [
        (["--messages", msgs, "--chat-template-file", bad_tmpl], "does not compile"),
        (["--messages", not_json], "not valid JSON"),
        (["--messages", no_role], "string 'role'"),
        (["--messages", msgs, "--chat-template-kwargs", "{nope"], "--chat-template-kwargs is not valid JSON"),
        (["--messages", msgs, "--chat-template-kwargs", '{"messages": []}'], "may not set 'messages'"),
        (["--messages", msgs, "--now", "yesterday"], "--now must be"),
        (["--messages", msgs, "--no-generation-prompt"], "always opens the assistant's turn"),
        (["--messages", msgs, "--tools", tools], "tools need the model's Jinja chat template"),
        (["--messages", msgs, "--tools", msgs, "--chat-template-file", bad_tmpl.replace("bad", "ok")],
         "'tools' must be a list"),
    ]
    for args, needle in cases:
        rc, out, err = run(["template", model, *args])
        last = err.strip().split("\n")[-1]
        check(rc == 1 and out == b"" and needle in last and last.startswith("pagoda: error: "),
              f"{args}: want an error with {needle!r}; rc {rc}, {err!r}")
    rc, out, err = run(["template", model, "--messages", msgs, "--chat-template", "chatml", "--chat-template-file",
                        bad_tmpl])
    check(rc != 0 and "excludes" in err.lower(), f"both template flags: {rc} {err!r}")

print(f"chat_template_test: {compared} renderings compared with jinja2 {render.jinja2.__version__}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)

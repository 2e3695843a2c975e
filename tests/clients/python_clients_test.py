#!/usr/bin/env python3
"""The Responses and Messages APIs, and tools with a template that has no tool format, through the official Python
clients, against `pagoda serve` on stories260K (built-in chatml) and SmolLM2-135M-Instruct (its own ChatML template):
  - openai: responses.create with a function tool, round trip (call, then function_call_output), streamed and not;
  - openai-agents: an Agent with one function tool run to completion by Runner (the tool runs, its result goes
    back, the run ends with a final output);
  - anthropic: messages.create with a tool round trip (tool_use, then tool_result), streamed and not, count_tokens;
  - each API's validation errors as the client's own error class.
Run with the virtual environment of scripts/install-python-clients.sh.
Usage: python_clients_test.py PAGODA SHARED_DIR SOURCE_DIR"""
import asyncio
import json
import os
import re
import subprocess
import sys
import time
import traceback

import anthropic
import openai
from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

pagoda, shared, src = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
MODELS = [("stories260K", os.path.join(shared, "models/stories260K.gguf")),
          ("SmolLM2-135M-Instruct.Q4_1", os.path.join(src, ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"))]
WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"],
           "additionalProperties": False}
failures = []
passed = 0


def check(cond, what):
    global passed
    if cond:
        passed += 1
    else:
        failures.append(what)
        print("FAIL:", what, flush=True)


def start(model_path):
    proc = subprocess.Popen([pagoda, "serve", model_path, "--port", "0", "-t", "2", "--kv-cache-mem", "256MiB"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log = ""
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        log += line
        m = re.search(r"serving '.*' on (http://[0-9.]+:\d+)", line)
        if m:
            return proc, m.group(1)
    proc.kill()
    raise RuntimeError("server did not start:\n" + log)


def responses_round_trip(name, url):
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
    tools = [{"type": "function", "name": "get_weather", "description": "Current weather in a city",
              "parameters": WEATHER, "strict": True}]
    inp = [{"role": "user", "content": "What is the weather in Oslo?"}]
    r = client.responses.create(model=name, input=inp, tools=tools, tool_choice="required",
                                parallel_tool_calls=False, max_output_tokens=160, temperature=0)
    calls = [o for o in r.output if o.type == "function_call"]
    check(len(calls) == 1 and calls[0].name == "get_weather", f"{name}: responses.create gives one call: {r.output}")
    check(isinstance(json.loads(calls[0].arguments).get("city"), str), f"{name}: its arguments fit the schema")
    # Streamed: the same call through the typed events, and the SDK's own accumulation.
    with client.responses.stream(model=name, input=inp, tools=tools, tool_choice="required",
                                 parallel_tool_calls=False, max_output_tokens=160, temperature=0) as stream:
        kinds = [ev.type for ev in stream]
        final = stream.get_final_response()
    check(kinds[0] == "response.created" and kinds[-1] == "response.completed", f"{name}: stream events {kinds[:3]}...{kinds[-2:]}")
    check("response.function_call_arguments.delta" in kinds, f"{name}: arguments streamed")
    check([(o.type, o.name, o.arguments) for o in final.output] == [(o.type, o.name, o.arguments) for o in r.output],
          f"{name}: streamed output equals the non-streamed one")
    nxt = client.responses.create(model=name, tools=tools, max_output_tokens=24, temperature=0,
                                  input=inp + [calls[0].model_dump(exclude_none=True),
                                               {"type": "function_call_output", "call_id": calls[0].call_id,
                                                "output": "sunny, 21 C"}])
    check(nxt.status in ("completed", "incomplete") and nxt.usage.input_tokens > r.usage.input_tokens,
          f"{name}: the tool result goes back: {nxt.status}")
    try:
        client.responses.create(model=name, input="x", previous_response_id="resp_1")
        check(False, f"{name}: previous_response_id is refused")
    except openai.BadRequestError as e:
        check(e.body.get("param") == "previous_response_id", f"{name}: the 400 names previous_response_id: {e.body}")


def agent_run(name, url):
    """An agent with one function tool, run to completion: the model must call the tool (tool_choice "required"),
    the Runner runs it, and the run ends there with the tool's result as its final output (tool_use_behavior
    "stop_on_first_tool"). Letting the model choose after the result is not asserted: SmolLM2-135M greedily calls
    the tool again turn after turn (measured), which is the model's limit, not the protocol's."""
    set_tracing_disabled(True)
    ran = []

    @function_tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        ran.append(city)
        return f"It is sunny in {city}."

    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
    agent = Agent(name="weather", instructions="Answer questions about the weather. Use the tool.",
                  tools=[get_weather], model=OpenAIResponsesModel(model=name, openai_client=client),
                  model_settings=ModelSettings(tool_choice="required", temperature=0, max_tokens=400,
                                               parallel_tool_calls=False),
                  tool_use_behavior="stop_on_first_tool")
    result = asyncio.run(Runner.run(agent, "What is the weather in Oslo?", max_turns=3))
    check(len(ran) == 1, f"{name}: the agent's tool ran once: {ran}")
    check(result.final_output == f"It is sunny in {ran[0] if ran else ''}.", f"{name}: the run ended with the tool's result: {result.final_output!r}")
    kinds = [type(item).__name__ for item in result.new_items]
    check(kinds == ["ToolCallItem", "ToolCallOutputItem"], f"{name}: a call, then its result: {kinds}")


def anthropic_round_trip(name, url):
    client = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)
    tools = [{"name": "get_weather", "description": "Current weather in a city", "input_schema": WEATHER}]
    msgs = [{"role": "user", "content": "What is the weather in Oslo?"}]
    # This SDK version has no sampling arguments of its own: temperature goes in the body as an extra field.
    req = dict(model=name, max_tokens=160, extra_body={"temperature": 0}, tools=tools, messages=msgs,
               tool_choice={"type": "any", "disable_parallel_tool_use": True})
    m = client.messages.create(**req)
    uses = [b for b in m.content if b.type == "tool_use"]
    check(m.stop_reason == "tool_use" and len(uses) == 1 and uses[0].name == "get_weather",
          f"{name}: messages.create gives a tool_use: {m}")
    check(isinstance(uses[0].input.get("city"), str), f"{name}: its input fits the schema")
    with client.messages.stream(**req) as stream:
        final = stream.get_final_message()
    check([(b.type, getattr(b, "input", None)) for b in final.content] == [(b.type, getattr(b, "input", None)) for b in m.content],
          f"{name}: the streamed message equals the non-streamed one")
    nxt = client.messages.create(model=name, max_tokens=24, extra_body={"temperature": 0}, tools=tools, messages=msgs + [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": "sunny, 21 C"}]}])
    check(nxt.usage.input_tokens > m.usage.input_tokens, f"{name}: the tool result goes back")
    counted = client.messages.count_tokens(model=name, messages=msgs, tools=tools)
    check(counted.input_tokens > 0, f"{name}: count_tokens")
    try:
        client.messages.create(model=name, max_tokens=8, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}])
        check(False, f"{name}: an image block is refused")
    except anthropic.BadRequestError as e:
        check(e.body["error"]["type"] == "invalid_request_error" and "image" in e.body["error"]["message"],
              f"{name}: Anthropic's error shape: {e.body}")


for name, path in MODELS:
    if not os.path.exists(path):
        failures.append(f"{path} is missing (scripts/fetch-model.sh fetches SmolLM2)")
        continue
    proc, url = start(path)
    try:
        for fn in (responses_round_trip, agent_run, anthropic_round_trip):
            try:
                fn(name, url)
            except Exception:
                failures.append(f"{name}: {fn.__name__} raised:\n{traceback.format_exc()}")
                print(failures[-1], flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)

print(f"python clients: {passed} checks passed, {len(failures)} failed")
sys.exit(1 if failures else 0)

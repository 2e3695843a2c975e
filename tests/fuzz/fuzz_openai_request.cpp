// libFuzzer target: untrusted HTTP bodies through everything `pagoda serve` does with them before the engine:
// JSON parsing, the completions and chat request parsers (tokenizer, chat template, context limit), and the
// response builder fed with the parsed request's shape; the Responses and Messages APIs' translators and their
// dialects (non-streamed and streamed replies). Also the API keys file parser, and the same bytes as a model's
// reply through the tool-call parsers of every format, streamed and whole (a model writes anything).
// Nothing may crash, leak or trip the sanitizers; errors are fine.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "api/anthropic_messages.h"
#include "api/openai_request.h"
#include "api/responses_api.h"
#include "api/openai_response.h"
#include "fuzz_model.h"
#include "server/api_keys.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)pagoda::ApiKeys::parse(text, "fuzz");
  for (auto format : {pagoda::ToolCallFormat::kHermes, pagoda::ToolCallFormat::kLlama3, pagoda::ToolCallFormat::kMistral,
                      pagoda::ToolCallFormat::kGeneric, pagoda::ToolCallFormat::kLlama4,
                      pagoda::ToolCallFormat::kQwen3Coder})
    for (bool streamed : {false, true}) {
      pagoda::ResponseBuilder reply(pagoda::ApiEndpoint::kChatCompletions, "id", "m", 0, pagoda::fuzz_model().tokenizer(), 1, -1);
      reply.tool_format = format;
      reply.parallel_tool_calls = (size & 1) != 0;
      for (size_t at = 0; at < text.size(); at += 3) {
        pagoda::StreamEvent ev;
        ev.token = 5;
        ev.text = std::string(text.substr(at, 3));
        if (streamed) {
          for (const auto& chunk : reply.chunks_for(ev)) (void)pagoda::to_wire(chunk);
        } else {
          reply.add(ev);
        }
      }
      pagoda::StreamEvent fin;
      fin.kind = pagoda::StreamEvent::Kind::kFinished;
      fin.finish = (size & 2) ? pagoda::FinishReason::kLength : pagoda::FinishReason::kStop;
      if (streamed) {
        for (const auto& chunk : reply.chunks_for(fin)) (void)pagoda::to_wire(chunk);
      } else {
        reply.add(fin);
        (void)pagoda::to_wire(reply.final_response(1));
      }
    }
  const nlohmann::json body = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  static const pagoda::ChatPrompt kLlama2 = pagoda::ChatPrompt::builtin(pagoda::ChatTemplateFamily::kLlama2);
  const pagoda::ApiLimits limits{512, &kLlama2};
  // The Responses and Messages APIs: translated, then parsed as chat, then answered in their own shapes.
  const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(text, nullptr, false);
  const pagoda::DialectContext dctx{"chatcmpl-1", "m", 0};
  for (int api = 0; api < 3; ++api) {
    auto t = api == 0 ? pagoda::translate_responses_request(ordered, dctx)
                      : pagoda::translate_anthropic_request(ordered, dctx, api == 2);
    if (!t.ok()) continue;
    const nlohmann::json chat_body(t->chat_body);
    auto r = pagoda::parse_chat_request(chat_body, pagoda::fuzz_model().tokenizer(), limits, &t->chat_body);
    if (!r.ok()) {
      (void)t->dialect->param_name(r.error().param);
      continue;
    }
    pagoda::ResponseBuilder builder(r->endpoint, "chatcmpl-1", "m", 0, pagoda::fuzz_model().tokenizer(), 1, -1);
    builder.tool_format = r->tool_format;
    pagoda::StreamEvent ev;
    ev.token = r->gen.prompt.back();
    ev.text = "{\"x";
    pagoda::StreamEvent fin;
    fin.kind = pagoda::StreamEvent::Kind::kFinished;
    fin.finish = pagoda::FinishReason::kLength;
    pagoda::ResponseBuilder whole = builder;
    std::string sse = t->dialect->stream_open(3);
    for (const auto* e : {&ev, &fin}) {
      for (const auto& chunk : builder.chunks_for(*e)) sse += t->dialect->stream_chunk(chunk);
      whole.add(*e);
    }
    sse += t->dialect->stream_close(3, builder.completion_tokens(), builder.cached_prompt_tokens());
    auto again = api == 0 ? pagoda::translate_responses_request(ordered, dctx)
                          : pagoda::translate_anthropic_request(ordered, dctx, api == 2);
    (void)pagoda::to_wire(again->dialect->response(whole.final_response(3)));
  }
  for (bool chat : {false, true}) {
    auto r = chat ? pagoda::parse_chat_request(body, pagoda::fuzz_model().tokenizer(), limits)
                  : pagoda::parse_completion_request(body, pagoda::fuzz_model().tokenizer(), limits);
    if (!r.ok()) continue;
    pagoda::ResponseBuilder builder(r->endpoint, "id", "m", 0, pagoda::fuzz_model().tokenizer(), r->gen.n, r->gen.logprobs);
    pagoda::StreamEvent ev;
    ev.token = r->gen.prompt.back();
    ev.text = "x";
    ev.top_logprobs = {{r->gen.prompt.front(), -1.0f}};
    (void)builder.chunks_for(ev);
    builder.add(ev);
    (void)pagoda::to_wire(builder.final_response(static_cast<int64_t>(r->gen.prompt.size())));
  }
  return 0;
}

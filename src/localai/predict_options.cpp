#include "localai/predict_options.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

#include "api/chat_dialect.h"

namespace pagoda::localai {
namespace {

using ojson = nlohmann::ordered_json;

// OpenAI parameter -> the PredictOptions field it was written from.
constexpr std::array<std::pair<std::string_view, std::string_view>, 20> kFieldNames = {{
    {"prompt", "Prompt"},
    {"messages", "Messages"},
    {"max_tokens", "Tokens"},
    {"temperature", "Temperature"},
    {"top_k", "TopK"},
    {"top_p", "TopP"},
    {"min_p", "MinP"},
    {"seed", "Seed"},
    {"stop", "StopPrompts"},
    {"ignore_eos", "IgnoreEOS"},
    {"repetition_penalty", "Penalty"},
    {"frequency_penalty", "FrequencyPenalty"},
    {"presence_penalty", "PresencePenalty"},
    {"logit_bias", "LogitBias"},
    {"grammar", "Grammar"},
    {"tools", "Tools"},
    {"tool_choice", "ToolChoice"},
    {"chat_template_kwargs", "Metadata"},
    {"logprobs", "Logprobs"},
    {"top_logprobs", "TopLogprobs"},
}};

Error field_error(const char* field, const std::string& why) {
  return make_field_error(field, std::string("'") + field + "' " + why);
}

// A JSON text carried in a string field; `what` says what it must be.
Result<ojson> json_field(const std::string& text, const char* field) {
  ojson value = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return field_error(field, "is not valid JSON");
  return value;
}

// Set fields pagoda does not implement. LocalAI sends some of them on every request at their neutral value
// (TypicalP and TailFreeSamplingZ as 1 or 0), which is accepted.
Status refuse_unimplemented(const backend::PredictOptions& o) {
  auto refuse = [](const char* field, const char* what) { return field_error(field, what); };
  if (o.images_size() > 0) return refuse("Images", "is not supported: pagoda serves text-only models");
  if (o.audios_size() > 0) return refuse("Audios", "is not supported: pagoda serves text-only models");
  if (o.videos_size() > 0) return refuse("Videos", "is not supported: pagoda serves text-only models");
  if (o.embeddingtokens_size() > 0 || !o.embeddings().empty())
    return refuse(o.embeddingtokens_size() > 0 ? "EmbeddingTokens" : "Embeddings",
                  "is not supported (pagoda-localai does not serve the Embedding RPC)");
  if (o.mirostat() != 0) return refuse("Mirostat", "is not supported (send 0)");
  if (o.typicalp() != 0 && o.typicalp() != 1) return refuse("TypicalP", "is not supported (send 0 or 1)");
  if (o.tailfreesamplingz() != 0 && o.tailfreesamplingz() != 1)
    return refuse("TailFreeSamplingZ", "is not supported (send 0 or 1)");
  if (o.penalizenl()) return refuse("PenalizeNL", "is not supported (send false)");
  if (!o.negativeprompt().empty()) return refuse("NegativePrompt", "is not supported");
  if (o.negativepromptscale() != 0 && o.negativepromptscale() != 1)
    return refuse("NegativePromptScale", "is not supported (send 0 or 1)");
  if (o.ropefreqbase() != 0) return refuse("RopeFreqBase", "is not supported: the model's own RoPE is used (send 0)");
  if (o.ropefreqscale() != 0 && o.ropefreqscale() != 1)
    return refuse("RopeFreqScale", "is not supported: the model's own RoPE is used (send 0)");
  if (o.ndraft() != 0) return refuse("NDraft", "is not supported (pagoda has no draft model; send 0)");
  if (o.logprobs() < 0) return refuse("Logprobs", "must be 0 (off) or positive (on)");
  if (o.toplogprobs() != 0 && o.logprobs() == 0) return refuse("TopLogprobs", "needs 'Logprobs'");
  // pagoda's repetition penalty covers the whole prompt and output; llama.cpp's looks at the last Repeat tokens.
  const bool penalty = o.penalty() != 0 && o.penalty() != 1;
  if (penalty && o.repeat() != 0 && o.repeat() != -1)
    return refuse("Repeat", "(repeat_last_n) other than 0 or -1 is not supported with a Penalty: pagoda's repetition "
                            "penalty covers the whole prompt and output");
  return Status::success();
}

// Messages as OpenAI chat messages (tool_calls: the JSON text parsed; empty fields left out).
Result<ojson> chat_messages(const backend::PredictOptions& o) {
  ojson messages = ojson::array();
  for (int i = 0; i < o.messages_size(); ++i) {
    const backend::Message& m = o.messages(i);
    const std::string where = "Messages[" + std::to_string(i) + "]";
    if (m.role().empty()) return make_field_error("Messages", "'" + where + ".role' is empty");
    ojson message = {{"role", m.role()}, {"content", m.content()}};
    if (!m.name().empty()) message["name"] = m.name();
    if (!m.tool_call_id().empty()) message["tool_call_id"] = m.tool_call_id();
    if (!m.reasoning_content().empty()) message["reasoning_content"] = m.reasoning_content();
    if (!m.tool_calls().empty()) {
      ojson calls = ojson::parse(m.tool_calls(), nullptr, /*allow_exceptions=*/false);
      if (calls.is_discarded() || !calls.is_array())
        return make_field_error("Messages", "'" + where + ".tool_calls' must be a JSON array of tool calls");
      message["tool_calls"] = std::move(calls);
    }
    messages.push_back(std::move(message));
  }
  return messages;
}

// Metadata as template variables: chat_template_kwargs (LocalAI's JSON object, written last, wins) over the other
// keys ("true"/"false" as booleans, as LocalAI's own coercion does).
Result<ojson> template_kwargs(const backend::PredictOptions& o) {
  ojson kwargs = ojson::object();
  for (const auto& [key, value] : o.metadata()) {
    if (key == "chat_template_kwargs") continue;
    if (value == "true" || value == "false") {
      kwargs[key] = value == "true";
    } else {
      kwargs[key] = value;
    }
  }
  if (auto blob = o.metadata().find("chat_template_kwargs"); blob != o.metadata().end()) {
    ojson parsed = ojson::parse(blob->second, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !parsed.is_object())
      return make_field_error("Metadata", "'Metadata[\"chat_template_kwargs\"]' must be a JSON object");
    for (auto& [key, value] : parsed.items()) kwargs[key] = value;
  }
  return kwargs;
}

}  // namespace

std::string predict_field_for(const std::string& openai_param) {
  for (const auto& [openai, field] : kFieldNames)
    if (openai == openai_param) return std::string(field);
  return openai_param;
}

Result<ojson> openai_body_for(const backend::PredictOptions& o, bool* chat) {
  PAGODA_RETURN_IF_ERROR(refuse_unimplemented(o));
  *chat = o.usetokenizertemplate() && o.messages_size() > 0;
  if (!*chat && o.messages_size() > 0)
    return field_error("Messages", "needs 'UseTokenizerTemplate' (without it LocalAI renders the prompt itself)");
  ojson body = ojson::object();
  if (*chat) {
    auto messages = chat_messages(o);
    if (!messages.ok()) return messages.error();
    body["messages"] = std::move(*messages);
    auto kwargs = template_kwargs(o);
    if (!kwargs.ok()) return kwargs.error();
    if (!kwargs->empty()) body["chat_template_kwargs"] = std::move(*kwargs);
    if (!o.tools().empty()) {
      auto tools = json_field(o.tools(), "Tools");
      if (!tools.ok()) return tools.error();
      body["tools"] = std::move(*tools);
    }
    if (!o.toolchoice().empty()) {
      // A JSON value ("auto", {"type": "function", ...}) or, as LocalAI may send it, a bare word.
      ojson choice = ojson::parse(o.toolchoice(), nullptr, /*allow_exceptions=*/false);
      body["tool_choice"] = choice.is_discarded() ? ojson(o.toolchoice()) : std::move(choice);
    }
  } else {
    if (!o.tools().empty() || !o.toolchoice().empty())
      return field_error(o.tools().empty() ? "ToolChoice" : "Tools",
                         "needs 'UseTokenizerTemplate' with 'Messages' (the chat template renders the tools)");
    if (o.prompt().empty()) return field_error("Prompt", "is empty (and there are no Messages)");
    body["prompt"] = o.prompt();
  }
  // Tokens 0: no limit, which is the rest of the context (filled in after parsing for completions).
  if (o.tokens() < 0) return field_error("Tokens", "must be 0 (no limit) or positive");
  if (o.tokens() > 0) body["max_tokens"] = o.tokens();
  body["temperature"] = o.temperature();
  body["top_k"] = o.topk();
  body["top_p"] = o.topp() == 0 ? 1.0f : o.topp();
  body["min_p"] = o.minp();
  body["seed"] = o.seed();
  if (o.stopprompts_size() > 0) {
    ojson stop = ojson::array();
    for (const std::string& s : o.stopprompts()) stop.push_back(s);
    body["stop"] = std::move(stop);
  }
  if (o.ignoreeos()) body["ignore_eos"] = true;
  if (o.penalty() != 0) body["repetition_penalty"] = o.penalty();
  if (o.frequencypenalty() != 0) body["frequency_penalty"] = o.frequencypenalty();
  if (o.presencepenalty() != 0) body["presence_penalty"] = o.presencepenalty();
  if (!o.logitbias().empty()) {
    auto bias = json_field(o.logitbias(), "LogitBias");
    if (!bias.ok()) return bias.error();
    body["logit_bias"] = std::move(*bias);
  }
  if (!o.grammar().empty()) body["grammar"] = o.grammar();
  // Logprobs on: the chosen token's logprob and TopLogprobs alternatives (chat: a switch and a count; completions:
  // the count).
  if (o.logprobs() > 0) {
    if (*chat) {
      body["logprobs"] = true;
      body["top_logprobs"] = o.toplogprobs();
    } else {
      body["logprobs"] = o.toplogprobs();
      if (o.toplogprobs() < 0 || o.toplogprobs() > 20)
        return field_error("TopLogprobs", "must be an integer between 0 and 20");
    }
  }
  return body;
}

Result<OpenAiRequest> generation_request_for(const backend::PredictOptions& o, const Tokenizer& tokenizer,
                                             const ApiLimits& limits) {
  bool chat = false;
  auto body = openai_body_for(o, &chat);
  if (!body.ok()) return body.error();
  const nlohmann::json sorted(*body);
  auto parsed = chat ? parse_chat_request(sorted, tokenizer, limits, &*body)
                     : parse_completion_request(sorted, tokenizer, limits, &*body);
  if (!parsed.ok()) {
    const std::string field = predict_field_for(parsed.error().param);
    return make_field_error(field, rename_in_message(parsed.error().message, parsed.error().param, field));
  }
  // Tokens 0 on a completion: to the end of the context, as the chat parser resolves no max_tokens.
  if (!chat && o.tokens() == 0)
    parsed->gen.max_tokens = limits.max_model_len - static_cast<int64_t>(parsed->gen.prompt.size()) -
                             std::max<int64_t>(limits.anchor_tokens, 0);
  if (!o.correlationid().empty()) parsed->gen.id = o.correlationid();
  return parsed;
}

}  // namespace pagoda::localai

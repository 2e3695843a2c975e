#include "api/openai_response.h"

#include "api/generic_tool_format.h"

#include "grammar/token_mask.h"

namespace pagoda {
namespace {

using json = nlohmann::json;

json byte_list(const std::string& s) {
  json bytes = json::array();
  for (unsigned char c : s) bytes.push_back(static_cast<int>(c));
  return bytes;
}

}  // namespace

const char* openai_finish_reason(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAnchorRevoked:
      return "anchor_revoked";
    case FinishReason::kCancelled:
    case FinishReason::kError:
    case FinishReason::kNone:
      break;
  }
  return "abort";
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

std::string to_wire(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

ResponseBuilder::ResponseBuilder(ApiEndpoint endpoint, std::string id, std::string model, int64_t created,
                                 const Tokenizer& tokenizer, int32_t num_choices, int32_t logprobs)
    : endpoint_(endpoint),
      id_(std::move(id)),
      model_(std::move(model)),
      created_(created),
      tokenizer_(tokenizer),
      logprobs_(logprobs),
      choices_(static_cast<size_t>(std::max(num_choices, 1))) {}

json ResponseBuilder::chunk_base() const {
  const bool chat = endpoint_ == ApiEndpoint::kChatCompletions;
  json j = {{"id", id_},
            {"object", chat ? "chat.completion.chunk" : "text_completion"},
            {"created", created_},
            {"model", model_},
            {"choices", json::array()}};
  if (include_usage_null) j["usage"] = nullptr;
  if (continuous_usage_prompt_tokens >= 0) j["usage"] = usage_json(continuous_usage_prompt_tokens, completion_tokens_);
  return j;
}

std::string ResponseBuilder::token_text(int32_t id) const {
  return tokens_as_ids ? "token_id:" + std::to_string(id) : tokenizer_.piece(id);
}

json ResponseBuilder::logprobs_for(const StreamEvent& ev, const Choice& choice) const {
  const std::string piece = token_text(ev.token);
  if (endpoint_ == ApiEndpoint::kChatCompletions) {
    json top = json::array();
    for (const TokenLogprob& t : ev.top_logprobs) {
      const std::string p = token_text(t.id);
      top.push_back({{"token", p}, {"logprob", t.logprob}, {"bytes", byte_list(p)}});
    }
    return {{"token", piece}, {"logprob", ev.logprob}, {"bytes", byte_list(piece)}, {"top_logprobs", top}};
  }
  json top = json::object();
  for (const TokenLogprob& t : ev.top_logprobs) top[token_text(t.id)] = t.logprob;
  return {{"token", piece}, {"logprob", ev.logprob}, {"top", top}, {"offset", choice.text_offset}};
}

// Completions' logprobs are four parallel lists; chat's a list of entries under "content".
void ResponseBuilder::append_logprobs(json& logprobs, const json& entry) const {
  if (endpoint_ == ApiEndpoint::kChatCompletions) {
    if (logprobs.is_null()) logprobs = {{"content", json::array()}};
    logprobs["content"].push_back(entry);
    return;
  }
  if (logprobs.is_null())
    logprobs = {{"tokens", json::array()},
                {"token_logprobs", json::array()},
                {"top_logprobs", json::array()},
                {"text_offset", json::array()}};
  logprobs["tokens"].push_back(entry["token"]);
  logprobs["token_logprobs"].push_back(entry["logprob"]);
  logprobs["top_logprobs"].push_back(entry["top"]);
  logprobs["text_offset"].push_back(entry["offset"]);
}

ParsedReply ResponseBuilder::parse_reply(std::string_view text, bool* cut_off) const {
  const size_t cut = unfinished_call_start(tool_format, text);
  *cut_off = cut != std::string_view::npos;
  ParsedReply reply = parse_tool_calls(tool_format, *cut_off ? text.substr(0, cut) : text, &tools);
  if (!parallel_tool_calls && reply.calls.size() > 1) reply.calls.resize(1);
  return reply;
}

const char* ResponseBuilder::tool_finish_reason(FinishReason engine_reason, bool has_calls, bool cut_off) const {
  if (cut_off && engine_reason == FinishReason::kLength) return "length";
  return has_calls ? "tool_calls" : openai_finish_reason(engine_reason);
}

json ResponseBuilder::tool_calls_json(std::string_view text, const ParsedReply& reply, int32_t choice) const {
  // The calls the stream would have sent, joined: one reading of a reply, streamed or not.
  ToolCallStream stream(tool_format, parallel_tool_calls, &tools);
  json calls = json::array();
  for (const ToolCallDelta& d : stream.finish(text, reply)) {
    if (d.header) {
      calls.push_back({{"id", tool_call_id(tool_format, id_, choice, d.index)},
                       {"type", "function"},
                       {"function", {{"name", d.name}, {"arguments", d.arguments}}}});
    } else {
      calls[static_cast<size_t>(d.index)]["function"]["arguments"] =
          calls[static_cast<size_t>(d.index)]["function"]["arguments"].get<std::string>() + d.arguments;
    }
  }
  return calls;
}

json ResponseBuilder::tool_call_deltas_json(const std::vector<ToolCallDelta>& deltas, int32_t choice) const {
  json out = json::array();
  for (const ToolCallDelta& d : deltas) {
    json call = {{"index", d.index}};
    if (d.header) {
      call["id"] = tool_call_id(tool_format, id_, choice, d.index);
      call["type"] = "function";
      call["function"] = {{"name", d.name}, {"arguments", d.arguments}};
    } else {
      call["function"] = {{"arguments", d.arguments}};
    }
    out.push_back(std::move(call));
  }
  return out;
}

std::vector<json> ResponseBuilder::chunks_for(const StreamEvent& ev) {
  std::vector<json> out;
  if (ev.index < 0 || ev.index >= static_cast<int32_t>(choices_.size())) return out;
  Choice& c = choices_[ev.index];
  const bool chat = endpoint_ == ApiEndpoint::kChatCompletions;
  note_warm_start(ev);
  note_cached_tokens(ev);
  if (ev.kind == StreamEvent::Kind::kFinished && ev.finish == FinishReason::kError) return out;
  if (chat && tool_format != ToolCallFormat::kNone) {
    // Text is released as content only where it cannot be part of a tool call; calls go out as they form.
    c.held += reply_text(ev);
    if (!c.calls) c.calls.emplace(tool_format, parallel_tool_calls, &tools);
    std::string content;
    std::vector<ToolCallDelta> deltas;
    const char* finish = nullptr;
    const bool generic = tool_format == ToolCallFormat::kGeneric;
    if (ev.kind == StreamEvent::Kind::kToken) {
      ++completion_tokens_;
      if (generic) {
        // The reply is one JSON object: its message streams decoded (c.released counts decoded bytes).
        const std::string message = generic_response_text(c.held);
        if (message.size() > c.released) content = message.substr(c.released);
        c.released = std::max(c.released, message.size());
        deltas = c.calls->update(c.held);
      } else {
        const size_t n = releasable_content(tool_format, c.held, &c.decided);
        if (n > c.released) content = c.held.substr(c.released, n - c.released);
        c.released = std::max(c.released, n);
        deltas = c.calls->update(std::string_view(c.held).substr(c.released));
      }
      if (content.empty() && deltas.empty() && c.role_sent) return out;
    } else {
      const std::string_view rest = generic ? std::string_view(c.held) : std::string_view(c.held).substr(c.released);
      bool cut_off = false;
      const ParsedReply reply = parse_reply(rest, &cut_off);
      content = !generic ? reply.content : reply.content.size() > c.released ? reply.content.substr(c.released) : "";
      deltas = c.calls->finish(rest, reply);
      finish = tool_finish_reason(ev.finish, c.calls->calls_started() > 0 || !reply.calls.empty(), cut_off);
    }
    json delta = json::object();
    if (!c.role_sent) {
      delta["role"] = "assistant";
      c.role_sent = true;
    }
    if (!content.empty() || (delta.contains("role") && deltas.empty())) delta["content"] = content;
    if (!deltas.empty()) {
      // The calls' deltas in a chunk of their own (after any content in the same delta), then the finish.
      json call_chunk = chunk_base();
      json d = delta;
      d["tool_calls"] = tool_call_deltas_json(deltas, ev.index);
      call_chunk["choices"].push_back({{"index", ev.index}, {"delta", d}, {"logprobs", nullptr}, {"finish_reason", nullptr}});
      out.push_back(std::move(call_chunk));
      if (!finish) return out;
      delta = json::object();
    }
    json chunk = chunk_base();
    chunk["choices"].push_back(
        {{"index", ev.index}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish ? json(finish) : json(nullptr)}});
    if (finish) chunk["choices"][0]["stop_reason"] = ev.stop_string.empty() ? json(nullptr) : json(ev.stop_string);
    out.push_back(std::move(chunk));
    return out;
  }
  json logprobs = nullptr;
  if (ev.kind == StreamEvent::Kind::kToken) {
    ++completion_tokens_;
    if (logprobs_ >= 0) append_logprobs(logprobs, logprobs_for(ev, c));  // this chunk's token only
    c.text_offset += static_cast<int64_t>(ev.text.size());
    if (ev.text.empty() && logprobs.is_null() && (!chat || c.role_sent)) return out;
  }
  json chunk = chunk_base();
  json choice = {{"index", ev.index}};
  if (chat) {
    json delta = json::object();
    if (!c.role_sent) {
      delta["role"] = "assistant";
      c.role_sent = true;
    }
    if (!ev.text.empty() || delta.contains("role")) delta["content"] = ev.text;
    choice["delta"] = delta;
  } else {
    choice["text"] = ev.text;
  }
  choice["logprobs"] = logprobs;
  choice["finish_reason"] =
      ev.kind == StreamEvent::Kind::kFinished ? json(openai_finish_reason(ev.finish)) : json(nullptr);
  if (ev.kind == StreamEvent::Kind::kFinished)
    choice["stop_reason"] = ev.stop_string.empty() ? json(nullptr) : json(ev.stop_string);
  chunk["choices"].push_back(choice);
  out.push_back(std::move(chunk));
  return out;
}

json ResponseBuilder::usage_chunk(int64_t prompt_tokens) const {
  json chunk = chunk_base();
  chunk["usage"] = usage_json(prompt_tokens, completion_tokens_);
  if (anchor_tokens >= 0) chunk["usage"]["anchor_tokens"] = anchor_tokens;
  add_pagoda_usage(chunk["usage"]);
  return chunk;
}

void ResponseBuilder::note_warm_start(const StreamEvent& ev) {
  if (ev.kind != StreamEvent::Kind::kToken || ev.warm_start == WarmStartUse::kOff) return;
  ++warm_start_tried_;
  if (ev.warm_start == WarmStartUse::kHit) ++warm_start_hits_;
  warm_start_similarity_ = std::max(warm_start_similarity_, ev.warm_start_similarity);
}

void ResponseBuilder::note_cached_tokens(const StreamEvent& ev) {
  if (ev.kind != StreamEvent::Kind::kToken || ev.cached_prompt_tokens < 0) return;
  cached_prompt_tokens_ = std::max<int64_t>(cached_prompt_tokens_, 0) + ev.cached_prompt_tokens;
}

void ResponseBuilder::add_pagoda_usage(json& usage) const {
  // OpenAI's (and vLLM's) field for prompt caching: how many prompt tokens were served from the cache.
  if (cached_prompt_tokens_ >= 0) usage["prompt_tokens_details"] = {{"cached_tokens", cached_prompt_tokens_}};
  if (warm_start_tried_ == 0) return;
  // Whether the first token came from warm start (for several prompts: whether any did), and the nearest
  // library entry's cosine similarity.
  usage["pagoda"] = {{"warm_start", warm_start_hits_ > 0}, {"warm_start_similarity", warm_start_similarity_}};
}

void ResponseBuilder::add(const StreamEvent& ev) {
  if (ev.index < 0 || ev.index >= static_cast<int32_t>(choices_.size())) return;
  note_warm_start(ev);
  note_cached_tokens(ev);
  Choice& c = choices_[ev.index];
  if (ev.kind == StreamEvent::Kind::kToken) {
    ++completion_tokens_;
    if (logprobs_ >= 0) append_logprobs(c.logprobs, logprobs_for(ev, c));
    c.text_offset += static_cast<int64_t>(ev.text.size());
  } else {
    c.finish_reason = openai_finish_reason(ev.finish);
    c.finish_event = ev.finish;
    c.stop_string = ev.stop_string;
  }
  c.text += endpoint_ == ApiEndpoint::kChatCompletions && tool_format != ToolCallFormat::kNone ? reply_text(ev) : ev.text;
}

std::string ResponseBuilder::reply_text(const StreamEvent& ev) const {
  // A control token that stands for a tool-call marker prints nothing; the parser needs its text.
  if (ev.kind == StreamEvent::Kind::kToken && tokenizer_.piece(ev.token).empty())
    if (const std::string_view marker = grammar::grammar_piece(tokenizer_, ev.token); !marker.empty())
      return ev.text + std::string(marker);
  return ev.text;
}

json ResponseBuilder::final_response(int64_t prompt_tokens) const {
  const bool chat = endpoint_ == ApiEndpoint::kChatCompletions;
  json j = {{"id", id_},
            {"object", chat ? "chat.completion" : "text_completion"},
            {"created", created_},
            {"model", model_},
            {"choices", json::array()}};
  for (size_t i = 0; i < choices_.size(); ++i) {
    const Choice& c = choices_[i];
    json choice = {{"index", i}};
    const char* finish = c.finish_reason;
    if (chat && tool_format != ToolCallFormat::kNone) {
      bool cut_off = false;
      const ParsedReply reply = parse_reply(c.text, &cut_off);
      const json calls = tool_calls_json(c.text, reply, static_cast<int32_t>(i));
      choice["message"] = {{"role", "assistant"},
                           {"content", calls.empty() || !reply.content.empty() ? json(reply.content) : json(nullptr)}};
      if (!calls.empty()) choice["message"]["tool_calls"] = calls;
      if (c.finish_event) finish = tool_finish_reason(*c.finish_event, !calls.empty(), cut_off);
    } else if (chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    } else {
      choice["text"] = c.text;
    }
    choice["logprobs"] = c.logprobs;
    choice["finish_reason"] = finish ? json(finish) : json(nullptr);
    // vLLM's field: the stop string that ended the choice (null for the end-of-text token or any other reason).
    choice["stop_reason"] = c.stop_string.empty() ? json(nullptr) : json(c.stop_string);
    j["choices"].push_back(choice);
  }
  j["usage"] = usage_json(prompt_tokens, completion_tokens_);
  if (anchor_tokens >= 0) j["usage"]["anchor_tokens"] = anchor_tokens;
  add_pagoda_usage(j["usage"]);
  return j;
}

}  // namespace pagoda

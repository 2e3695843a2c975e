#include "loadgen/completion_stream.h"

#include <nlohmann/json.hpp>

namespace pagoda::loadgen {
namespace {

// At most this much of a bad event goes into an error message.
constexpr size_t kMaxQuoted = 200;

std::string quote(std::string_view s) {
  return s.size() <= kMaxQuoted ? std::string(s) : std::string(s.substr(0, kMaxQuoted)) + "...";
}

bool is_token_chunk(const nlohmann::json& event) {
  const auto choices = event.find("choices");
  if (choices == event.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object()) return false;
  const auto& choice = (*choices)[0];
  const auto text = choice.find("text");
  const bool has_text = text != choice.end() && text->is_string() && !text->get_ref<const std::string&>().empty();
  const auto finish = choice.find("finish_reason");
  const bool finished = finish != choice.end() && !finish->is_null();
  return has_text || !finished;
}

}  // namespace

Status CompletionStream::feed(std::string_view bytes, double t_s) {
  events_.clear();
  parser_.feed(bytes, events_);
  for (const auto& data : events_) PAGODA_RETURN_IF_ERROR(on_event(data, t_s));
  return Status::success();
}

Status CompletionStream::on_event(const std::string& data, double t_s) {
  if (done_) return Status::success();
  if (data == "[DONE]") {
    done_ = true;
    return Status::success();
  }
  const auto event = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!event.is_object()) return make_error("malformed stream event: " + quote(data));
  if (const auto err = event.find("error"); err != event.end()) {
    const auto msg = err->is_object() ? err->find("message") : err->end();
    return make_error("error event: " +
                      quote(msg != err->end() && msg->is_string() ? msg->get<std::string>() : err->dump()));
  }
  if (is_token_chunk(event)) token_times_s_.push_back(t_s);
  if (const auto usage = event.find("usage"); usage != event.end() && usage->is_object()) {
    const auto n = usage->find("completion_tokens");
    if (n != usage->end() && n->is_number_integer()) usage_tokens_ = n->get<int64_t>();
    const auto p = usage->find("prompt_tokens");
    if (p != usage->end() && p->is_number_integer()) usage_prompt_tokens_ = p->get<int64_t>();
    if (const auto d = usage->find("prompt_tokens_details"); d != usage->end() && d->is_object()) {
      const auto c = d->find("cached_tokens");
      if (c != d->end() && c->is_number_integer()) usage_cached_tokens_ = c->get<int64_t>();
    }
  }
  return Status::success();
}

Status CompletionStream::finish(double e2e_s, RequestRecord& r) const {
  if (!done_) return make_error("the stream ended before data: [DONE]");
  if (token_times_s_.empty()) return make_error("the stream carried no token");
  r.ttft_s = token_times_s_.front();
  r.e2e_s = e2e_s;
  r.itl_s.clear();
  for (size_t i = 1; i < token_times_s_.size(); ++i) r.itl_s.push_back(token_times_s_[i] - token_times_s_[i - 1]);
  r.output_tokens = usage_tokens_.value_or(static_cast<int64_t>(token_times_s_.size()));
  r.reported_prompt_tokens = usage_prompt_tokens_;
  r.cached_prompt_tokens = usage_cached_tokens_;
  return Status::success();
}

}  // namespace pagoda::loadgen

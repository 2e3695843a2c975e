#include "api/chat_session.h"

#include <algorithm>

#include "tokenizer/streaming_detokenizer.h"

namespace pagoda {

ChatSession::ChatSession(SequenceRunner& runner, const ChatPrompt& prompt, nlohmann::ordered_json messages)
    : runner_(runner), prompt_(prompt), messages_(std::move(messages)) {
  runner_.reset();
}

Result<std::vector<int32_t>> ChatSession::render_prompt() const {
  ChatInput input;
  input.messages = messages_;
  auto text = prompt_.render(input);
  if (!text.ok()) return text.error();
  return tokenize_chat_prompt(*text, runner_.model().tokenizer());
}

bool ChatSession::drop_earliest_exchange(int* dropped) {
  const size_t first = !messages_.empty() && messages_[0].value("role", "") == "system" ? 1 : 0;
  // The exchange: the first user message after `first` and everything up to the next user message.
  size_t end = first + 1;
  while (end < messages_.size() && messages_[end].value("role", "") != "user") ++end;
  if (end >= messages_.size()) return false;  // that user message is the last one: nothing left to drop
  messages_.erase(messages_.begin() + static_cast<std::ptrdiff_t>(first),
                  messages_.begin() + static_cast<std::ptrdiff_t>(end));
  *dropped += static_cast<int>(end - first);
  return true;
}

Result<ChatTurn> ChatSession::reply(std::string_view user_message, const GenerateOptions& options,
                                    const std::function<void(std::string_view)>& on_text) {
  const nlohmann::ordered_json before = messages_;
  auto restore = [&](Error e) {
    messages_ = before;
    return e;
  };
  messages_.push_back({{"role", "user"}, {"content", std::string(user_message)}});
  ChatTurn turn;
  const int64_t n_ctx = runner_.n_ctx();
  const int64_t reserve = std::min<int64_t>(options.max_new_tokens, std::max<int64_t>(1, n_ctx / 4));
  for (;;) {
    auto ids = render_prompt();
    if (!ids.ok()) return restore(ids.error());
    if (static_cast<int64_t>(ids->size()) + reserve <= n_ctx) {
      turn.prompt_ids = std::move(*ids);
      break;
    }
    if (!drop_earliest_exchange(&turn.dropped_messages))
      return restore(make_error("the conversation's last message needs " + std::to_string(ids->size()) +
                                " prompt tokens and " + std::to_string(reserve) +
                                " for the reply, more than the context size of " + std::to_string(n_ctx)));
  }
  if (turn.prompt_ids.empty()) return restore(make_error("the chat template rendered an empty prompt"));

  // The longest prefix whose K/V the runner holds; at least the last prompt token is evaluated (its logits).
  const size_t limit = std::min(cached_.size(), turn.prompt_ids.size() - 1);
  size_t same = 0;
  while (same < limit && cached_[same] == turn.prompt_ids[same]) ++same;
  turn.reused = static_cast<int64_t>(same);

  const Tokenizer& tok = runner_.model().tokenizer();
  StreamingDetokenizer detok(tok);
  auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    turn.text += piece;
    if (on_text) on_text(piece);
  };
  auto generated = generate_after(runner_, turn.prompt_ids, turn.reused, options, [&](int32_t id) {
    if (!tok.is_end_of_generation(id)) emit(detok.push(id));
  });
  if (!generated.ok()) {
    cached_.clear();  // the runner may hold part of this turn: start the next one from nothing
    runner_.reset();
    return restore(generated.error());
  }
  emit(detok.flush());
  turn.ids = std::move(*generated);
  turn.ended = !turn.ids.empty() && tok.is_end_of_generation(turn.ids.back());
  // The runner holds the prompt and every generated token but the last (sampled, never evaluated).
  cached_ = turn.prompt_ids;
  if (!turn.ids.empty()) cached_.insert(cached_.end(), turn.ids.begin(), turn.ids.end() - 1);
  cached_.resize(std::min<size_t>(cached_.size(), static_cast<size_t>(runner_.length())));
  messages_.push_back({{"role", "assistant"}, {"content", turn.text}});
  return turn;
}

}  // namespace pagoda

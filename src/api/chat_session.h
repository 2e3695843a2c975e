// ChatSession: a conversation with a model on one SequenceRunner, turn by turn (`pagoda run --chat`).
//
// Each turn appends the user's message, renders the whole conversation through the chat template (as the chat
// endpoint does: the template decides what the model sees, so a template that re-renders earlier turns
// differently is still right) and tokenizes it. The runner keeps the K/V of the tokens it was given; only the
// tokens after the longest prefix the new prompt shares with them are evaluated, so a turn costs its own tokens, not
// the conversation's. The reply (sampled until an end-of-generation token, the token limit or the context end)
// becomes the assistant's message. Greedy replies are those of a fresh runner given the whole prompt, bit for bit
// (generate_after: every kernel is batch-invariant).
//
// When the conversation no longer fits the context with room for a reply (min(max_new_tokens, n_ctx / 4) tokens),
// its earliest exchanges are dropped (a leading system message stays), one user message and what answered it at a
// time; a single message that alone does not fit is an error, and the conversation is left as it was.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/chat_prompt.h"
#include "engine/sequence_runner.h"
#include "util/result.h"

namespace pagoda {

struct ChatTurn {
  std::vector<int32_t> prompt_ids;  // the whole conversation's prompt this turn
  int64_t reused = 0;               // leading prompt tokens whose K/V the runner already held
  std::vector<int32_t> ids;         // the generated tokens, the end-of-generation token included when one came
  std::string text;                 // the reply as the user reads it (no end-of-turn marker)
  bool ended = false;               // an end-of-generation token ended it (not the token limit or the context)
  int dropped_messages = 0;         // messages dropped from the conversation's start to fit the context
};

class ChatSession {
 public:
  // `runner` and `prompt` must outlive the session. `messages`: the conversation so far (OpenAI's role/content
  // objects), e.g. a system message.
  ChatSession(SequenceRunner& runner, const ChatPrompt& prompt,
              nlohmann::ordered_json messages = nlohmann::ordered_json::array());

  // Adds the user's message and generates the reply; on_text gets the reply's text as it is generated (complete
  // UTF-8 pieces). Errors: the template cannot render the conversation, the message alone does not fit the context,
  // a forward error. After an error the conversation is as it was before the call.
  Result<ChatTurn> reply(std::string_view user_message, const GenerateOptions& options,
                         const std::function<void(std::string_view)>& on_text = {});

  const nlohmann::ordered_json& messages() const { return messages_; }

 private:
  // The prompt tokens of messages_ plus a generation prompt.
  Result<std::vector<int32_t>> render_prompt() const;
  // Drops the earliest exchange (after a leading system message); false when only the last user message is left.
  bool drop_earliest_exchange(int* dropped);

  SequenceRunner& runner_;
  const ChatPrompt& prompt_;
  nlohmann::ordered_json messages_;
  std::vector<int32_t> cached_;  // the tokens whose K/V the runner holds, positions 0 .. runner.length() - 1
};

}  // namespace pagoda

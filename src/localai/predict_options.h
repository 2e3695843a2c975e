// LocalAI's PredictOptions (proto/localai/backend.proto) as a pagoda generation request.
//
// A PredictOptions is rewritten as the OpenAI body pagoda's own parsers read (api/openai_request.h), the way the
// Responses and Messages APIs are (api/chat_dialect.h), so templates, tools, grammars, stop strings, sampling
// checks and context limits are the server's own:
//   UseTokenizerTemplate and Messages  -> a chat body: the model's chat template renders Messages (with Tools,
//                                         ToolChoice and Metadata's template variables)
//   otherwise                          -> a completions body: Prompt verbatim (LocalAI rendered it already)
// Field by field (LocalAI's proto3 zeros mean "not set" where llama.cpp's backend reads them so):
//   Tokens (0: to the end of the context), Temperature (0: greedy), TopK (0: off), TopP (0: off), MinP (0: off),
//   Seed, StopPrompts, IgnoreEOS, Penalty (repetition; 0: off), FrequencyPenalty, PresencePenalty, LogitBias (JSON),
//   Grammar (GBNF), Tools/ToolChoice (JSON, template path only), Metadata (chat_template_kwargs JSON, and every
//   other key as a template variable: "true"/"false" become booleans), CorrelationId (the request id), Logprobs
//   (> 0: on) with TopLogprobs alternatives (0..20).
// Accepted and without effect on the output (where and how to run; pagoda decides those itself): Threads, Batch,
// NKeep, F16KV, MLock, MMap, PromptCacheAll, PromptCacheRO, PromptCachePath, MainGPU, TensorSplit, Debug,
// DebugMode, ModelIdentity (checked by the service), and the sampler parameters of samplers that are off (MirostatETA
// and MirostatTAU with Mirostat 0, Repeat without a Penalty).
// Anything else that is set (images, audio, video, Mirostat, TypicalP or TailFreeSamplingZ other than 0 or 1,
// NegativePrompt, RoPE overrides, draft tokens, ...) is refused with an Error naming the field: a request
// never gets an answer that silently ignored what it asked for.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "api/openai_request.h"
#include "backend.pb.h"
#include "tokenizer/tokenizer.h"
#include "util/result.h"

namespace pagoda::localai {

// The OpenAI body for `options`; *chat says which endpoint reads it. Errors: Error::param is the PredictOptions
// field ("Messages", "LogitBias", ...).
Result<nlohmann::ordered_json> openai_body_for(const backend::PredictOptions& options, bool* chat);

// The PredictOptions field an OpenAI parameter came from ("max_tokens" -> "Tokens"); the name itself when none.
std::string predict_field_for(const std::string& openai_param);

// The whole conversion: the body, parsed by pagoda's chat or completions parser against `limits`. Errors name the
// PredictOptions field in Error::param and in the message.
Result<OpenAiRequest> generation_request_for(const backend::PredictOptions& options, const Tokenizer& tokenizer,
                                             const ApiLimits& limits);

}  // namespace pagoda::localai

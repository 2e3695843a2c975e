// backend.Backend (LocalAI's gRPC backend contract, proto/localai/backend.proto) served by pagoda's engine.
//
//   Health          "OK" whether or not a model is loaded (LocalAI polls it before LoadModel)
//   LoadModel       ModelOptions -> a LoadedModel through the ModelLoader; failure is Result{success: false,
//                   message}; a second LoadModel replaces the first model
//   Predict         one Reply: the whole text, tokens, prompt_tokens, timings in milliseconds (and with Logprobs,
//                   logprobs: OpenAI's chat logprobs JSON for every token)
//   PredictStream   one Reply per piece of text as the engine emits it (tokens and prompt_tokens so far), then a
//                   last Reply with no text and the final usage, timings and logprobs
//   with Tools      replies also carry chat_deltas: content and tool calls parsed in the template's tool-call format
//                   (the server's own parser), which LocalAI prefers to parsing the text itself
//   TokenizeString  PredictOptions.Prompt as `pagoda tokenize` encodes it (BOS added, special tokens parsed)
//   Status          UNINITIALIZED / READY / BUSY (requests in flight) and the process's memory
//   Free            drops the model (requests in flight finish first: each holds the model it started with)
// Every other RPC of backend.Backend is UNIMPLEMENTED (gRPC's answer for a method never registered).
//
// Errors, as LocalAI's own backends give them: no model loaded -> FAILED_PRECONDITION; PredictOptions.ModelIdentity
// other than the loaded ModelOptions.Model -> NOT_FOUND "model identity mismatch"; a request pagoda cannot serve as
// asked -> INVALID_ARGUMENT naming the PredictOptions field; a client that went away -> the request is cancelled.
// With an auth token (LOCALAI_GRPC_AUTH_TOKEN), every served RPC needs metadata "authorization: Bearer <token>"
// (compared in constant time), else UNAUTHENTICATED.
//
// Concurrency: gRPC's handler threads each submit to the one Engine, which batches them (continuous batching); no
// lock is held while a request runs.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/chat_prompt.h"
#include "backend.grpc.pb.h"
#include "engine/engine.h"
#include "model/model.h"
#include "util/result.h"

namespace pagoda::localai {

// A model ready to serve: its engine running, its chat template chosen.
struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Engine> engine;  // started; stopped when the LoadedModel goes
  ChatPrompt chat_prompt = ChatPrompt::builtin(ChatTemplateFamily::kChatml);
  int64_t max_model_len = 0;  // tokens per sequence, prompt included
  std::string identity;       // ModelOptions.Model, checked against PredictOptions.ModelIdentity
  std::string description;    // for the log

  LoadedModel() = default;
  LoadedModel(const LoadedModel&) = delete;
  LoadedModel& operator=(const LoadedModel&) = delete;
  ~LoadedModel();
};

// Builds the model ModelOptions describe (the binary's: apps/pagoda-localai/model_loader.h). An Error's message is
// LoadModel's Result.message.
using ModelLoader = std::function<Result<std::shared_ptr<LoadedModel>>(const backend::ModelOptions&)>;

class BackendService final : public backend::Backend::Service {
 public:
  // auth_token: empty = no authentication.
  BackendService(ModelLoader loader, std::string auth_token);

  grpc::Status Health(grpc::ServerContext* context, const backend::HealthMessage* request,
                      backend::Reply* reply) override;
  grpc::Status Free(grpc::ServerContext* context, const backend::HealthMessage* request,
                    backend::Result* result) override;
  grpc::Status Predict(grpc::ServerContext* context, const backend::PredictOptions* request,
                       backend::Reply* reply) override;
  grpc::Status LoadModel(grpc::ServerContext* context, const backend::ModelOptions* request,
                         backend::Result* result) override;
  grpc::Status PredictStream(grpc::ServerContext* context, const backend::PredictOptions* request,
                             grpc::ServerWriter<backend::Reply>* writer) override;
  grpc::Status TokenizeString(grpc::ServerContext* context, const backend::PredictOptions* request,
                              backend::TokenizationResponse* response) override;
  grpc::Status Status(grpc::ServerContext* context, const backend::HealthMessage* request,
                      backend::StatusResponse* response) override;

 private:
  grpc::Status authorize(const grpc::ServerContext* context) const;
  // The loaded model for a request naming `identity`, or the status that refuses it.
  grpc::Status model_for(const std::string& identity, std::shared_ptr<LoadedModel>* out) const;
  // A piece of the reply: its text, the completion tokens so far, and (requests with tools) the content and tool
  // calls it released. false: the client is gone.
  using PieceCallback = std::function<bool(const std::string&, int32_t, std::vector<backend::ChatDelta>)>;
  // Predict and PredictStream: converts, submits and reads the stream, calling `on_piece` per token with text or
  // deltas. *last gets prompt_tokens before the first piece, then the final usage, timings, logprobs, and the
  // deltas the end of the reply released.
  grpc::Status generate(grpc::ServerContext* context, const backend::PredictOptions& request,
                        const PieceCallback& on_piece, backend::Reply* last);

  ModelLoader loader_;
  const std::string expected_authorization_;  // "Bearer <token>", empty when off
  mutable std::mutex mu_;                     // guards model_ (the pointer; never held while a request runs)
  std::shared_ptr<LoadedModel> model_;
  std::mutex load_mu_;  // one LoadModel / Free at a time
  std::atomic<int64_t> in_flight_{0};
  std::atomic<int64_t> next_request_{1};  // ids of requests without a CorrelationId
};

}  // namespace pagoda::localai

#include "localai/backend_service.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>

#include "api/openai_response.h"
#include "localai/chat_deltas.h"
#include "localai/predict_options.h"
#include "server/api_keys.h"

namespace pagoda::localai {
namespace {

using MonoClock = std::chrono::steady_clock;

double ms_between(MonoClock::time_point a, MonoClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Resident memory of this process in bytes (0 when /proc is not there).
uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// Counts a request in flight for Status's BUSY while it lives.
class InFlight {
 public:
  explicit InFlight(std::atomic<int64_t>& n) : n_(n) { n_.fetch_add(1); }
  ~InFlight() { n_.fetch_sub(1); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  std::atomic<int64_t>& n_;
};

}  // namespace

LoadedModel::~LoadedModel() {
  if (engine) engine->stop();
}

BackendService::BackendService(ModelLoader loader, std::string auth_token)
    : loader_(std::move(loader)), expected_authorization_(auth_token.empty() ? "" : "Bearer " + auth_token) {}

grpc::Status BackendService::authorize(const grpc::ServerContext* context) const {
  if (expected_authorization_.empty()) return grpc::Status::OK;
  const auto& metadata = context->client_metadata();
  const auto found = metadata.find("authorization");
  if (found == metadata.end() ||
      !ApiKeys::equal_constant_time(std::string_view(found->second.data(), found->second.size()),
                                    expected_authorization_))
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid token");
  return grpc::Status::OK;
}

grpc::Status BackendService::model_for(const std::string& identity, std::shared_ptr<LoadedModel>* out) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    *out = model_;
  }
  if (!*out) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "Model not loaded");
  // LocalAI's rule: either side empty, or both equal.
  if (!identity.empty() && !(*out)->identity.empty() && identity != (*out)->identity)
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "pagoda: model identity mismatch: loaded \"" +
                                                         (*out)->identity + "\", requested \"" + identity + "\"");
  return grpc::Status::OK;
}

grpc::Status BackendService::Health(grpc::ServerContext* context, const backend::HealthMessage*,
                                    backend::Reply* reply) {
  if (auto st = authorize(context); !st.ok()) return st;
  reply->set_message("OK");
  return grpc::Status::OK;
}

grpc::Status BackendService::LoadModel(grpc::ServerContext* context, const backend::ModelOptions* request,
                                       backend::Result* result) {
  if (auto st = authorize(context); !st.ok()) return st;
  std::lock_guard<std::mutex> loading(load_mu_);
  // The old model goes first, so that two never hold memory at once; requests still running keep theirs alive.
  {
    std::lock_guard<std::mutex> lock(mu_);
    model_.reset();
  }
  auto loaded = loader_(*request);
  if (!loaded.ok()) {
    std::fprintf(stderr, "pagoda-localai: LoadModel failed: %s\n", loaded.error().message.c_str());
    result->set_success(false);
    result->set_message(loaded.error().message);
    return grpc::Status::OK;
  }
  std::fprintf(stderr, "pagoda-localai: loaded %s\n", (*loaded)->description.c_str());
  result->set_success(true);
  result->set_message("Loading succeeded");
  std::lock_guard<std::mutex> lock(mu_);
  model_ = std::move(*loaded);
  return grpc::Status::OK;
}

grpc::Status BackendService::Free(grpc::ServerContext* context, const backend::HealthMessage*,
                                  backend::Result* result) {
  if (auto st = authorize(context); !st.ok()) return st;
  std::lock_guard<std::mutex> loading(load_mu_);
  std::shared_ptr<LoadedModel> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dropped = std::move(model_);
  }
  result->set_success(true);
  result->set_message(dropped ? "Model freed" : "No model loaded");
  return grpc::Status::OK;  // `dropped` goes here, or with the last request still using it
}

grpc::Status BackendService::generate(grpc::ServerContext* context, const backend::PredictOptions& request,
                                      const PieceCallback& on_piece,
                                      backend::Reply* last) {
  const MonoClock::time_point arrival = MonoClock::now();
  std::shared_ptr<LoadedModel> m;
  if (auto st = model_for(request.modelidentity(), &m); !st.ok()) return st;
  InFlight in_flight(in_flight_);
  const KvPoolShape& shape = m->engine->pool_shape();
  ApiLimits limits{m->max_model_len, &m->chat_prompt, -1};
  limits.kv_pool_blocks = shape.num_blocks;
  limits.kv_block_size = shape.block_size;
  limits.kv_pool_tokens = shape.num_blocks * shape.block_size;
  auto converted = generation_request_for(request, m->model->tokenizer(), limits);
  if (!converted.ok()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, converted.error().message);
  // The engine's request id (and the tool calls' ids derive from it): CorrelationId, else one of this process's.
  if (converted->gen.id.empty()) converted->gen.id = "localai-" + std::to_string(next_request_.fetch_add(1));
  const int32_t prompt_tokens = static_cast<int32_t>(converted->gen.prompt.size());
  last->set_prompt_tokens(prompt_tokens);  // known before the first piece of text
  // Logprobs: OpenAI's chat shape, {"content": [{"token", "logprob", "bytes", "top_logprobs"}, ...]}, which is what
  // LocalAI parses from Reply.logprobs; the server's own builder writes it.
  std::optional<ResponseBuilder> logprobs;
  if (converted->gen.logprobs >= 0)
    logprobs.emplace(ApiEndpoint::kChatCompletions, converted->gen.id, "", 0, m->model->tokenizer(), 1,
                     converted->gen.logprobs);
  // Tools: the reply is parsed for calls in the template's format as it streams, into Reply.chat_deltas.
  std::optional<ResponseBuilder> calls;
  if (converted->tool_format != ToolCallFormat::kNone) {
    calls.emplace(ApiEndpoint::kChatCompletions, converted->gen.id, "", 0, m->model->tokenizer(), 1, -1);
    calls->tool_format = converted->tool_format;
    calls->parallel_tool_calls = converted->parallel_tool_calls;
    calls->tools = converted->tools;
  }
  auto stream = m->engine->submit(std::move(converted->gen));

  int32_t tokens = 0;
  bool cancelled = false;
  std::string error;
  MonoClock::time_point first_token{};
  StreamEvent ev;
  for (;;) {
    const auto wait = stream->next_for(&ev, std::chrono::milliseconds(100));
    if (wait == RequestStream::WaitResult::kEnd) break;
    if (!cancelled && context->IsCancelled()) {
      cancelled = true;
      stream->cancel();  // the engine frees its blocks at its next step; the stream then ends
    }
    if (wait == RequestStream::WaitResult::kTimeout) continue;
    if (logprobs) logprobs->add(ev);
    std::vector<backend::ChatDelta> deltas;
    if (calls)
      for (const nlohmann::json& chunk : calls->chunks_for(ev))
        for (backend::ChatDelta& d : chat_deltas_of(chunk)) deltas.push_back(std::move(d));
    if (ev.kind == StreamEvent::Kind::kToken) {
      if (tokens++ == 0) first_token = MonoClock::now();
      if (!cancelled && (!ev.text.empty() || !deltas.empty()) && !on_piece(ev.text, tokens, std::move(deltas))) {
        cancelled = true;
        stream->cancel();
      }
    } else {
      for (backend::ChatDelta& d : deltas) *last->add_chat_deltas() = std::move(d);  // what the end released
      if (ev.finish == FinishReason::kError && error.empty()) error = ev.error;
    }
  }
  if (cancelled) return grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the request");
  // An error before any token is the engine refusing the request (it can never fit the KV pool, say).
  if (!error.empty())
    return grpc::Status(tokens == 0 ? grpc::StatusCode::INVALID_ARGUMENT : grpc::StatusCode::INTERNAL, error);
  const MonoClock::time_point end = MonoClock::now();
  last->set_tokens(tokens);
  last->set_timing_prompt_processing(ms_between(arrival, tokens > 0 ? first_token : end));
  last->set_timing_token_generation(tokens > 0 ? ms_between(first_token, end) : 0.0);
  if (logprobs) {
    const nlohmann::json choice = logprobs->final_response(prompt_tokens)["choices"][0];
    if (choice.contains("logprobs") && !choice["logprobs"].is_null()) last->set_logprobs(to_wire(choice["logprobs"]));
  }
  return grpc::Status::OK;
}

grpc::Status BackendService::Predict(grpc::ServerContext* context, const backend::PredictOptions* request,
                                     backend::Reply* reply) {
  if (auto st = authorize(context); !st.ok()) return st;
  std::string text;
  auto st = generate(
      context, *request,
      [&text, reply](const std::string& piece, int32_t, std::vector<backend::ChatDelta> deltas) {
        text += piece;
        for (backend::ChatDelta& d : deltas) *reply->add_chat_deltas() = std::move(d);
        return true;
      },
      reply);
  if (st.ok()) reply->set_message(text);
  return st;
}

grpc::Status BackendService::PredictStream(grpc::ServerContext* context, const backend::PredictOptions* request,
                                           grpc::ServerWriter<backend::Reply>* writer) {
  if (auto st = authorize(context); !st.ok()) return st;
  backend::Reply last;
  auto st = generate(
      context, *request,
      [writer, &last](const std::string& piece, int32_t tokens, std::vector<backend::ChatDelta> deltas) {
        backend::Reply reply;
        reply.set_message(piece);
        for (backend::ChatDelta& d : deltas) *reply.add_chat_deltas() = std::move(d);
        reply.set_tokens(tokens);
        reply.set_prompt_tokens(last.prompt_tokens());
        return writer->Write(reply);
      },
      &last);
  if (!st.ok()) return st;
  writer->Write(last);  // LocalAI keeps the last Reply's usage and timings
  return grpc::Status::OK;
}

grpc::Status BackendService::TokenizeString(grpc::ServerContext* context, const backend::PredictOptions* request,
                                            backend::TokenizationResponse* response) {
  if (auto st = authorize(context); !st.ok()) return st;
  std::shared_ptr<LoadedModel> m;
  if (auto st = model_for(request->modelidentity(), &m); !st.ok()) return st;
  const std::vector<int32_t> ids =
      m->model->tokenizer().encode(request->prompt(), /*add_special=*/true, /*parse_special=*/true);
  response->set_length(static_cast<int32_t>(ids.size()));
  for (int32_t id : ids) response->add_tokens(id);
  return grpc::Status::OK;
}

grpc::Status BackendService::Status(grpc::ServerContext* context, const backend::HealthMessage*,
                                    backend::StatusResponse* response) {
  if (auto st = authorize(context); !st.ok()) return st;
  std::shared_ptr<LoadedModel> m;
  {
    std::lock_guard<std::mutex> lock(mu_);
    m = model_;
  }
  if (!m) {
    response->set_state(backend::StatusResponse::UNINITIALIZED);
  } else {
    response->set_state(in_flight_.load() > 0 ? backend::StatusResponse::BUSY : backend::StatusResponse::READY);
  }
  backend::MemoryUsageData* memory = response->mutable_memory();
  memory->set_total(resident_bytes());
  if (m) (*memory->mutable_breakdown())["kv_cache"] = m->engine->pool_shape().total_bytes();
  return grpc::Status::OK;
}

}  // namespace pagoda::localai

#include "model_loader.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "chat_template_flags.h"
#include "engine_flags.h"

namespace pagoda::cli {
namespace {

namespace fs = std::filesystem;

Result<std::string> model_file(const backend::ModelOptions& o) {
  std::string path = o.modelfile();
  if (path.empty()) {
    if (o.model().empty()) return make_error("ModelOptions names no model (Model and ModelFile are empty)");
    path = fs::path(o.model()).is_absolute() || o.modelpath().empty() ? o.model()
                                                                       : (fs::path(o.modelpath()) / o.model()).string();
  }
  std::error_code ec;
  if (!fs::exists(path, ec)) return make_error("model file not found: " + path);
  return path;
}

Status refuse_unimplemented(const backend::ModelOptions& o) {
  auto refuse = [](const std::string& field) {
    return make_field_error(field, "ModelOptions." + field + " is not supported by pagoda");
  };
  if (!o.loraadapter().empty() || o.loraadapters_size() > 0) return refuse("LoraAdapter");
  if (!o.lorabase().empty()) return refuse("LoraBase");
  if (!o.mmproj().empty()) return refuse("MMProj");
  if (!o.draftmodel().empty()) return refuse("DraftModel");
  if (o.ropefreqbase() != 0) return refuse("RopeFreqBase");
  if (o.ropefreqscale() != 0 && o.ropefreqscale() != 1) return refuse("RopeFreqScale");
  if (!o.ropescaling().empty()) return refuse("RopeScaling");
  if (o.yarnextfactor() != 0 || o.yarnattnfactor() != 0 || o.yarnbetafast() != 0 || o.yarnbetaslow() != 0)
    return refuse("YarnExtFactor");
  if (o.overrides_size() > 0) return refuse("Overrides");
  if (!o.tokenizer().empty()) return refuse("Tokenizer");
  if (!o.engineargs().empty()) return make_field_error("EngineArgs", "ModelOptions.EngineArgs is not supported by "
                                                                     "pagoda; give engine flags in Options");
  if (o.vocabonly()) return refuse("VocabOnly");
  if (!o.cachetypekey().empty() && !o.cachetypevalue().empty() && o.cachetypekey() != o.cachetypevalue())
    return make_field_error("CacheTypeKey", "pagoda stores K and V alike: CacheTypeKey and CacheTypeValue must match");
  return Status::success();
}

// Options as command-line arguments: "name:value" -> --name value; "name" or "name:true" -> --name.
std::vector<std::string> option_arguments(const backend::ModelOptions& o) {
  std::vector<std::string> args;
  for (const std::string& option : o.options()) {
    const size_t colon = option.find(':');
    std::string name = option.substr(0, colon);
    while (!name.empty() && name.front() == '-') name.erase(name.begin());
    for (char& c : name)
      if (c == '_') c = '-';
    const std::string value = colon == std::string::npos ? "true" : option.substr(colon + 1);
    if (value == "false") continue;  // a flag left off
    args.push_back("--" + name);
    if (value != "true") args.push_back(value);
  }
  return args;
}

}  // namespace

Result<std::shared_ptr<localai::LoadedModel>> load_model(const backend::ModelOptions& o) {
  PAGODA_RETURN_IF_ERROR(refuse_unimplemented(o));
  auto path = model_file(o);
  if (!path.ok()) return path.error();

  // The fields first, then Options (which may override them): one parse of `pagoda serve`'s flags.
  CLI::App app("pagoda-localai ModelOptions");
  EngineFlags engine;
  ChatTemplateFlags chat;
  add_engine_flags(app, engine);
  add_chat_template_flags(app, chat);
  std::vector<std::string> args;
  if (o.contextsize() > 0) args.insert(args.end(), {"--max-model-len", std::to_string(o.contextsize())});
  if (o.threads() > 0) args.insert(args.end(), {"--threads", std::to_string(o.threads())});
  if (o.nbatch() > 0) args.insert(args.end(), {"--max-num-batched-tokens", std::to_string(o.nbatch())});
  const std::string kv_type = o.cachetypekey().empty() ? o.cachetypevalue() : o.cachetypekey();
  if (!kv_type.empty()) args.insert(args.end(), {"--kv-cache-dtype", kv_type});
  for (std::string& a : option_arguments(o)) args.push_back(std::move(a));
  std::vector<const char*> argv = {"pagoda-localai"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return make_field_error("Options", std::string("ModelOptions (Options, ContextSize, Threads, NBatch): ") + e.what());
  }

  auto config = engine_config(engine, *path);
  if (!config.ok()) return config.error();
  config->prefault_kv = true;
  config->seed = static_cast<uint64_t>(static_cast<uint32_t>(o.seed()));
  auto model = Model::load(*path);
  if (!model.ok()) return make_error(*path + ": " + model.error().message);
  if (Status st = attach_warm_start(engine, **model, *config); !st.ok()) return st.error();
  auto loaded = std::make_shared<localai::LoadedModel>();
  std::string how;
  auto chat_prompt = chat_prompt_for((*model)->file(), (*model)->tokenizer(), chat, &how);
  if (!chat_prompt.ok()) return chat_prompt.error();
  loaded->chat_prompt = std::move(*chat_prompt);
  auto created = Engine::create(**model, *config);
  if (!created.ok()) return created.error();
  loaded->max_model_len = config->max_model_len > 0 ? config->max_model_len : (*model)->hparams().n_ctx_train;
  loaded->model = std::move(*model);
  loaded->engine = std::move(*created);
  loaded->engine->start();
  loaded->identity = o.model();
  loaded->description = *path + "; " + loaded->engine->describe() + "; chat template " +
                        loaded->chat_prompt.describe() + " (" + how + ")";
  return loaded;
}

}  // namespace pagoda::cli

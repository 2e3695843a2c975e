// pagoda inspect FILE.gguf|DIR: (a GGUF file or a Hugging Face folder, shown as the GGUF it maps to) architecture, hyperparameters, tokenizer summary, metadata and the tensor table.
// pagoda inspect --system: the build and this machine (CPU model, flags, the kernel set in use).
#include <cstdio>

#include "anchor/ed25519.h"
#include "build_info.h"
#include "commands.h"
#include "io/gguf_file.h"
#include "model/hf_folder.h"
#include "model/hparams.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::cli {
namespace {

int run(const std::string& path) {
  const bool folder = is_directory(path);
  auto file = open_model_file(path);
  if (!file.ok()) return fail(file.error().message);
  const GgufFile& f = *file;
  if (folder)
    std::printf("file: %s\nformat: Hugging Face folder (safetensors), shown as the GGUF metadata and tensor names it "
                "maps to; %zu metadata keys, %zu tensors\n",
                path.c_str(), f.metadata().size(), f.tensors().size());
  else
    std::printf("file: %s\nformat: GGUF v%u, alignment %u, %zu metadata keys, %zu tensors\n", path.c_str(),
                f.version(), f.alignment(), f.metadata().size(), f.tensors().size());

  auto arch = f.get_string_opt("general.architecture");
  if (arch.ok() && arch->has_value()) {
    std::printf("architecture: %s\n", (*arch)->c_str());
    // What verified anchors bind to: the SHA-256 of the file's bytes (weights and tokenizer together).
    if (!f.tensors().empty() && !folder) {
      auto digest = sha256_file(path);
      if (digest.ok()) std::printf("model_digest: %s\n", to_hex(*digest).c_str());
    }
    auto hp = read_hparams(f);
    if (hp.ok()) {
      std::printf(
          "hparams: n_vocab=%lld n_ctx_train=%lld n_embd=%lld n_layer=%lld n_head=%lld n_head_kv=%lld head_dim=%lld "
          "n_ff=%lld norm_eps=%g rope=%s n_rot=%lld freq_base=%g freq_scale=%g\n",
          (long long)hp->n_vocab, (long long)hp->n_ctx_train, (long long)hp->n_embd, (long long)hp->n_layer,
          (long long)hp->n_head, (long long)hp->n_head_kv, (long long)hp->head_dim, (long long)hp->n_ff, hp->norm_eps,
          hp->rope.type == RopeType::kNormal ? "normal" : "neox", (long long)hp->rope.n_rot, hp->rope.freq_base,
          hp->rope.freq_scale);
    } else if (!f.tensors().empty()) {
      std::printf("hparams: not loadable by pagoda: %s\n", hp.error().message.c_str());
    }
  }
  if (f.has("tokenizer.ggml.model")) {
    auto tok = Tokenizer::from_gguf(f);
    std::printf("tokenizer: %s\n", tok.ok() ? (*tok)->summary().c_str() : ("invalid: " + tok.error().message).c_str());
  }

  std::printf("\nmetadata:\n");
  for (const auto& [key, value] : f.metadata())
    std::printf("  %-44s %s\n", key.c_str(), value.to_display_string().c_str());

  if (!f.tensors().empty()) {
    std::printf("\ntensors:\n  %-36s %-6s %-22s %14s %14s\n", "name", "type", "shape", "offset", "bytes");
    uint64_t total = 0, params = 0;
    for (const auto& t : f.tensors()) {
      std::printf("  %-36s %-6s %-22s %14llu %14llu\n", t.name.c_str(), ggml_type_traits(t.type).name,
                  t.shape_string().c_str(), (unsigned long long)t.offset, (unsigned long long)t.n_bytes);
      total += t.n_bytes;
      params += t.num_elements();
    }
    std::printf("  total: %llu parameters, %.2f MiB\n", (unsigned long long)params, total / 1048576.0);
  }
  return 0;
}

}  // namespace

void add_inspect_command(CLI::App& app, Action& action) {
  auto path = std::make_shared<std::string>();
  auto system = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("inspect", "Describe a GGUF file, or this machine (--system)");
  cmd->add_option("file", *path, "A GGUF file or a Hugging Face folder");
  cmd->add_flag("--system", *system, "Describe the build and this machine: version, commit, CPU, flags, kernel set");
  cmd->callback([path, system, &action] {
    action = [path, system] {
      if (*system) std::fputs(version_report(/*system=*/true).c_str(), stdout);
      if (path->empty()) return *system ? 0 : fail("inspect needs a GGUF file, or --system");
      if (*system) std::fputc('\n', stdout);
      return run(*path);
    };
  });
}

}  // namespace pagoda::cli

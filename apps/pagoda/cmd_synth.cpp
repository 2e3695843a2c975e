// pagoda synth --arch llama|gpt2|gptneox --dim D --layers L --heads H --kv-heads K --ffn F --vocab-from VOCAB.gguf
//              --dtype f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q4_k|q6_k|q4_k_m --seed S -o OUT.gguf
#include <cstdio>

#include "commands.h"
#include "io/quantize.h"
#include "model/synth.h"

namespace pagoda::cli {
namespace {

struct SynthCliOptions {
  SynthOptions synth;
  std::string dtype = "f16";
  std::string vocab_path;
  std::string out_path;
};

int run(SynthCliOptions o) {
  const bool q4_k_m = o.dtype == "q4_k_m" || o.dtype == "Q4_K_M";
  auto dtype = parse_ggml_type(q4_k_m ? "q4_k" : o.dtype);
  o.synth.q4_k_m = q4_k_m;
  const bool writable = dtype && (*dtype == GgmlType::F32 || *dtype == GgmlType::F16 || *dtype == GgmlType::BF16 ||
                                  can_quantize(*dtype));
  if (!writable)
    return fail("--dtype '" + o.dtype + "' is not one of f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q6_k, q4_k_m");
  o.synth.dtype = *dtype;
  auto vocab = GgufFile::open(o.vocab_path);
  if (!vocab.ok()) return fail(vocab.error().message);
  auto writer = synthesize_model(o.synth, *vocab);
  if (!writer.ok()) return fail(writer.error().message);
  Status st = writer->write_file(o.out_path);
  if (!st.ok()) return fail(st.error().message);
  std::fprintf(stderr, "pagoda: wrote %s\n", o.out_path.c_str());
  return 0;
}

}  // namespace

void add_synth_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<SynthCliOptions>();
  CLI::App* cmd = app.add_subcommand("synth", "Write a model with seeded random weights and a real vocabulary");
  cmd->add_option("--arch", opts->synth.arch, "Architecture")->check(CLI::IsMember({"llama", "gpt2", "gptneox"}));
  cmd->add_option("--dim", opts->synth.dim, "Model width")->required();
  cmd->add_option("--layers", opts->synth.layers, "Number of layers")->required();
  cmd->add_option("--heads", opts->synth.heads, "Attention heads")->required();
  cmd->add_option("--kv-heads", opts->synth.kv_heads, "Key/value heads (default: --heads)");
  cmd->add_option("--ffn", opts->synth.ffn, "Feed-forward width")->required();
  cmd->add_option("--context", opts->synth.context, "Training context length to record (default 2048)");
  cmd->add_option("--vocab-from", opts->vocab_path, "GGUF file whose vocabulary to copy")->required();
  cmd->add_option("--dtype", opts->dtype, "Weight type: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q6_k, or the mix q4_k_m (default f16)");
  cmd->add_option("--seed", opts->synth.seed, "Random seed (default 0)")->check(uint64_text());
  cmd->add_option("-o,--output", opts->out_path, "Output file")->required();
  cmd->callback([opts, &action] {
    if (opts->synth.kv_heads == 0) opts->synth.kv_heads = opts->synth.heads;
    action = [opts] { return run(*opts); };
  });
}

}  // namespace pagoda::cli

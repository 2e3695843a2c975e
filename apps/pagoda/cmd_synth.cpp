// pagoda synth --arch llama|gpt2|gptneox --dim D --layers L --heads H --kv-heads K --ffn F --vocab-from VOCAB.gguf
//              --dtype PRESET (f32, f16, bf16 or a llama-quantize preset: io/quant_preset.h) --seed S -o OUT.gguf
#include <cstdio>

#include "commands.h"
#include "io/quant_preset.h"
#include "model/synth.h"

namespace pagoda::cli {
namespace {

struct SynthCliOptions {
  SynthOptions synth;
  std::string vocab_path;
  std::string out_path;
};

int run(SynthCliOptions o) {
  if (!find_quant_preset(o.synth.dtype))
    return fail("--dtype '" + o.synth.dtype + "' is not one of " + quant_preset_names());
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
  cmd->add_option("--dtype", opts->synth.dtype,
                  "Weight type: f32, f16, bf16, or a llama-quantize preset choosing each tensor's type (" +
                      quant_preset_names() + "; default f16)");
  cmd->add_option("--seed", opts->synth.seed, "Random seed (default 0)")->check(uint64_text());
  cmd->add_option("-o,--output", opts->out_path, "Output file")->required();
  cmd->callback([opts, &action] {
    if (opts->synth.kv_heads == 0) opts->synth.kv_heads = opts->synth.heads;
    action = [opts] { return run(*opts); };
  });
}

}  // namespace pagoda::cli

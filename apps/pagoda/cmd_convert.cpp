// pagoda convert DIR -o FILE.gguf [--dtype f32|f16|bf16|PRESET] (PRESET: a llama-quantize preset, io/quant_preset.h)
// A Hugging Face folder written as the GGUF llama.cpp's converter writes (model/convert.h).
#include <cstdio>

#include "commands.h"
#include "io/quant_preset.h"
#include "model/convert.h"
#include "model/hf_folder.h"

namespace pagoda::cli {
namespace {

struct ConvertOptions {
  std::string input;
  std::string output;
  std::string dtype = "f16";
};

int run(const ConvertOptions& o) {
  if (!is_directory(o.input)) return fail(o.input + " is not a folder: convert reads a Hugging Face model folder");
  auto folder = open_hf_folder(o.input, /*for_convert=*/true);
  if (!folder.ok()) return fail(folder.error().message);
  auto writer = convert_to_gguf(folder->gguf, o.dtype);
  if (!writer.ok()) return fail(o.input + ": " + writer.error().message);
  Status st = writer->write_file(o.output);
  if (!st.ok()) return fail(st.error().message);
  std::fprintf(stderr, "pagoda: wrote %s (%s, %zu tensors)\n", o.output.c_str(), o.dtype.c_str(),
               folder->gguf.tensors().size());
  return 0;
}

}  // namespace

void add_convert_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand("convert", "Write a Hugging Face model folder as a GGUF file (llama.cpp's layout)");
  cmd->add_option("folder", opts->input, "Hugging Face model folder (config.json, *.safetensors, tokenizer.json)")
      ->required();
  cmd->add_option("-o,--output", opts->output, "Output .gguf file")->required();
  cmd->add_option("--dtype", opts->dtype,
                  "Matrix type: f32, f16, bf16, or a llama-quantize preset choosing each tensor's type (" +
                      quant_preset_names() + "; default f16; norms and biases stay f32)");
  cmd->callback([opts, &action] { action = [opts] { return run(*opts); }; });
}

}  // namespace pagoda::cli

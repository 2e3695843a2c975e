// libFuzzer target: untrusted bytes as LocalAI's PredictOptions (protobuf wire format, proto/localai/backend.proto)
// through everything pagoda-localai does with a request before the engine: the conversion to an OpenAI body and
// pagoda's chat or completions parser (tokenizer, chat template, grammar, limits), as localai/predict_options.h.
// Nothing may crash, leak or trip the sanitizers; errors are fine.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>

#include "backend.pb.h"
#include "fuzz_model.h"
#include "localai/predict_options.h"

// protobuf logs every string field with invalid UTF-8 it refuses to parse: a line per input, not a finding.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  backend::PredictOptions options;
  if (!options.ParseFromArray(data, static_cast<int>(size))) return 0;
  static const pagoda::ChatPrompt kChatml = pagoda::ChatPrompt::builtin(pagoda::ChatTemplateFamily::kChatml);
  const pagoda::ApiLimits limits{512, &kChatml};
  auto r = pagoda::localai::generation_request_for(options, pagoda::fuzz_model().tokenizer(), limits);
  if (!r.ok()) (void)pagoda::localai::predict_field_for(r.error().param);
  return 0;
}

// Models from ../shared for unit tests that need a real tokenizer or real shapes, loaded once per test binary.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "model/model.h"

namespace pagoda {

inline const Model& stories260k() {
  static const std::unique_ptr<Model> model = [] {
    auto m = Model::load(std::string(PAGODA_SHARED_DIR) + "/models/stories260K.gguf");
    if (!m.ok()) {
      std::fprintf(stderr, "cannot load stories260K.gguf: %s\n", m.error().message.c_str());
      std::abort();
    }
    return std::move(*m);
  }();
  return *model;
}

}  // namespace pagoda

// The tiny model the request fuzz targets tokenize with (stories260K from ../shared), loaded once per process;
// a missing file traps, so a fuzz run never passes without its model.
#pragma once

#include <string>

#include "model/model.h"

namespace pagoda {

inline const Model& fuzz_model() {
  static const Model* m = [] {
    auto loaded = Model::load(std::string(PAGODA_SHARED_DIR) + "/models/stories260K.gguf");
    if (!loaded.ok()) __builtin_trap();
    return std::move(*loaded).release();
  }();
  return *m;
}

}  // namespace pagoda

// The fitted warm-start maps (`pagoda warmstart fit -o maps.safetensors`): the projector's weights plus the
// summary settings they were fitted with and the model shape they fit, in one safetensors file whose metadata
// says what it is. Loading checks every field; a map for another model shape is refused.
#pragma once

#include <string>

#include "io/safetensors.h"
#include "model/hparams.h"
#include "util/result.h"
#include "warmstart/kv_summary.h"
#include "warmstart/projector.h"

namespace pagoda::warmstart {

struct WarmStartMaps {
  SummaryOptions summary;
  double gamma = 0;
  Projector projector;
};

Status save_maps(const std::string& path, const WarmStartMaps& maps);
Result<WarmStartMaps> load_maps(const std::string& path);
// The same checks on an already parsed file (untrusted: every metadata field and the tensor's shape are checked).
Result<WarmStartMaps> maps_from_safetensors(const SafetensorsFile& file, const std::string& name);
// Ok when the maps were fitted for a model of this shape.
Status check_maps_fit_model(const WarmStartMaps& maps, const ModelHParams& hp);

}  // namespace pagoda::warmstart

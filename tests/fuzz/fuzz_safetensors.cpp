// Feeds arbitrary bytes to the safetensors reader and touches every byte range it vouched for; then to the two
// formats built on it, warm start's maps and library, whose metadata and shapes are untrusted too.
#include <cstddef>
#include <cstdint>

#include "io/safetensors.h"
#include "warmstart/library.h"
#include "warmstart/warm_start_maps.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = pagoda::SafetensorsFile::parse(data, size, "fuzz");
  if (!file.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const auto& t : file->tensors())
    if (t.n_bytes > 0) sink = sink ^ t.data[0] ^ t.data[t.n_bytes - 1];
  (void)pagoda::warmstart::maps_from_safetensors(*file, "fuzz");
  (void)pagoda::warmstart::WarmStartLibrary::from_safetensors(*file, "fuzz", 1 << 20);
  return 0;
}

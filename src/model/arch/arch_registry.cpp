#include <string>

#include "model/arch/arch_spec.h"

namespace pagoda {

// Each family's description lives in its own file of this folder.
extern const ArchSpec kLlamaArch;
extern const ArchSpec kQwen2Arch;
extern const ArchSpec kQwen3Arch;
extern const ArchSpec kGpt2Arch;
extern const ArchSpec kGptNeoxArch;
extern const ArchSpec kPhi3Arch;

const std::vector<const ArchSpec*>& all_archs() {
  static const std::vector<const ArchSpec*> archs = {&kLlamaArch, &kQwen2Arch,   &kQwen3Arch,
                                                     &kGpt2Arch,  &kGptNeoxArch, &kPhi3Arch};
  return archs;
}

const ArchSpec* find_arch(std::string_view gguf_name) {
  for (const ArchSpec* a : all_archs())
    if (gguf_name == a->name) return a;
  return nullptr;
}

const ArchSpec* find_arch_by_hf_model_type(std::string_view model_type) {
  for (const ArchSpec* a : all_archs())
    if (model_type == a->hf_model_type) return a;
  return nullptr;
}

std::string supported_arch_names() {
  std::string s;
  for (const ArchSpec* a : all_archs()) s += (s.empty() ? "" : ", ") + std::string(a->name);
  return s;
}

}  // namespace pagoda

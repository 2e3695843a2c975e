#include "anchor_setup.h"

#include <chrono>
#include <cstdio>

#include "anchor/ed25519.h"

namespace pagoda::cli {

Result<std::unique_ptr<AnchorService>> start_anchor_service(const AnchorSetup& setup, const std::string& model_path,
                                                            const Model& model, Engine& engine) {
  auto digest = sha256_file(model_path);
  if (!digest.ok()) return digest.error();
  AnchorRegistryConfig rc;
  rc.trust_root_path = setup.trust_root;
  rc.state_dir = setup.state_dir;
  rc.model_digest = *digest;
  rc.max_tokens = setup.max_tokens;
  const Tokenizer* tok = &model.tokenizer();
  // Like a prompt, BOS first when the model adds one; special-token text in an anchor is plain text.
  rc.tokenize = [tok](const std::string& text) { return tok->encode(text, /*add_special=*/true, /*parse_special=*/false); };
  rc.now = [] {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  };
  auto service = AnchorService::create(std::move(rc), engine);
  if (!service.ok()) return service.error();
  if (Status st = (*service)->restore_active(); !st.ok()) return st.error();
  for (const std::string& file : setup.files) {
    auto active = (*service)->load_file(file);
    if (!active.ok()) return active.error();
    std::fprintf(stderr, "pagoda: anchor %s active: %d tokens in %d pinned blocks, prefilled in %.1f ms\n",
                 active->record.digest.c_str(), active->pinned.tokens, active->pinned.blocks,
                 active->pinned.prefill_seconds * 1000);
  }
  (*service)->start_expiry_ticker();
  std::fprintf(stderr, "pagoda: anchors enabled: model digest %s, trust root version %llu\n", to_hex(*digest).c_str(),
               static_cast<unsigned long long>((*service)->registry().root_version()));
  return service;
}

}  // namespace pagoda::cli

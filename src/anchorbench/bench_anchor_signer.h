// Signed anchors for the benchmark: an Ed25519 key (ephemeral, generated per run and never written, for the
// in-process engine; the operator's NAME.key for a server whose trust root names it), an in-memory trust root
// naming it, and real envelopes verified by the same code as `pagoda serve`
// (verify_anchor_envelope). The benchmark's `anchor` mode thus pins verified anchors, and the cadence ablation's
// re-checks run the real verification.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "anchor/anchor_verifier.h"
#include "anchor/trust_root.h"
#include "model/model.h"
#include "util/result.h"

namespace pagoda::anchorbench {

struct SignedAnchor {
  std::string digest;
  std::string envelope_json;
  std::vector<int32_t> tokens;  // the verified text tokenized as serve tokenizes anchors (BOS first)
  double verify_seconds = 0;    // the registration-time verification
};

class BenchAnchorSigner {
 public:
  // Hashes the model file once (anchors are bound to it). Without `key` an ephemeral one is generated.
  static Result<BenchAnchorSigner> create(const std::string& model_path, const Model& model,
                                          const Ed25519KeyPair* key = nullptr);

  // Signs `text` (lineage "bench/<lineage>") and verifies it.
  Result<SignedAnchor> sign_and_verify(const std::string& text, const std::string& lineage);
  // Verifies an envelope signed earlier (as after a restart): the same digest and tokens.
  Result<SignedAnchor> verify(const std::string& envelope_json) const;
  // Verifies an envelope again (the cadence ablation's signature part).
  Status verify_again(const std::string& envelope_json) const;

 private:
  BenchAnchorSigner() = default;
  AnchorVerifyContext context() const;

  const Model* model_ = nullptr;
  Sha256Digest model_digest_{};
  Ed25519KeyPair key_{};
  std::string keyid_;
  TrustRoot root_;
};

}  // namespace pagoda::anchorbench

#include "anchor/anchor_verifier.h"

#include "anchor/anchor_error.h"
#include "anchor/dsse_envelope.h"

namespace pagoda {

Result<VerifiedAnchor> verify_anchor_envelope(std::string_view envelope_json, const AnchorVerifyContext& ctx) {
  auto envelope = parse_dsse_envelope(envelope_json);
  if (!envelope.ok()) return envelope.error();
  if (envelope->payload_type != kAnchorPayloadType)
    return make_coded_error(anchor_codes::kWrongPayloadType, "payloadType '" + envelope->payload_type +
                                                                 "' is not '" + std::string(kAnchorPayloadType) + "'");
  std::set<std::string> signers;
  if (Status st = verify_threshold(*envelope, *ctx.root, TrustRoleName::kAnchor, ctx.revoked_keyids, &signers);
      !st.ok())
    return st.error();
  auto payload = decode_anchor_payload(envelope->payload);
  if (!payload.ok()) return payload.error();
  if (payload->model != ctx.model_digest)
    return make_coded_error(anchor_codes::kWrongModel, "the anchor was made for model " + to_hex(payload->model) +
                                                           "; this server runs " + to_hex(ctx.model_digest));
  if (ctx.now < payload->issued)
    return make_coded_error(anchor_codes::kNotYetValid,
                            "the anchor is valid from " + std::to_string(payload->issued) + " (now " +
                                std::to_string(ctx.now) + ")");
  if (ctx.now >= payload->expires)
    return make_coded_error(anchor_codes::kExpired, "the anchor expired at " + std::to_string(payload->expires) +
                                                        " (now " + std::to_string(ctx.now) + ")");
  VerifiedAnchor out;
  out.digest = anchor_digest(envelope->payload);
  out.payload = std::move(*payload);
  out.envelope_json = std::string(envelope_json);
  out.signer_keyids = std::move(signers);
  return out;
}

}  // namespace pagoda

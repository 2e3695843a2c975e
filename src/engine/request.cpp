#include "engine/request.h"

namespace pagoda {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kNone: return "none";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
    case FinishReason::kAnchorRevoked: return "anchor_revoked";
  }
  return "none";
}

}  // namespace pagoda

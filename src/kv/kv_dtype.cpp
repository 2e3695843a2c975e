#include "kv/kv_dtype.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "util/fp16.h"

namespace pagoda {

const char* kv_dtype_name(KvDtype t) {
  switch (t) {
    case KvDtype::kF32: return "f32";
    case KvDtype::kF16: return "f16";
    case KvDtype::kBF16: return "bf16";
    case KvDtype::kQ8_0: return "q8_0";
  }
  return "?";
}

Result<KvDtype> parse_kv_dtype(const std::string& text) {
  std::string lower = text;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (KvDtype t : {KvDtype::kF32, KvDtype::kF16, KvDtype::kBF16, KvDtype::kQ8_0})
    if (lower == kv_dtype_name(t)) return t;
  return make_error("unknown KV cache dtype '" + text + "' (choose f32, f16, bf16 or q8_0)");
}

Status check_kv_head_dim(KvDtype t, int64_t head_dim) {
  if (t == KvDtype::kQ8_0 && head_dim % kKvQ8Block != 0)
    return make_error("the q8_0 KV cache needs a head dimension that is a multiple of 32; this model's is " +
                      std::to_string(head_dim) + " (use f16, bf16 or f32)");
  return Status::success();
}

int64_t kv_bytes(KvDtype t, int64_t n) {
  switch (t) {
    case KvDtype::kF32: return 4 * n;
    case KvDtype::kF16:
    case KvDtype::kBF16: return 2 * n;
    case KvDtype::kQ8_0: return n / kKvQ8Block * kKvQ8BlockBytes;
  }
  return 0;
}

void kv_store_row(KvDtype t, const float* x, int64_t n, void* dst) {
  auto* out = static_cast<uint8_t*>(dst);
  switch (t) {
    case KvDtype::kF32: std::memcpy(out, x, 4 * n); return;
    case KvDtype::kF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case KvDtype::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case KvDtype::kQ8_0:
      for (int64_t b = 0; b < n / kKvQ8Block; ++b) {
        const float* v = x + b * kKvQ8Block;
        uint8_t* block = out + b * kKvQ8BlockBytes;
        float amax = 0.0f;
        for (int j = 0; j < kKvQ8Block; ++j) amax = std::max(amax, std::fabs(v[j]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t dh = f32_to_f16(d);
        std::memcpy(block, &dh, 2);
        for (int j = 0; j < kKvQ8Block; ++j) {
          float r = v[j] * id;
          r = r <= 127.0f ? r : 127.0f;  // NaN (from an inf or NaN input) gives 127: never an undefined conversion
          r = r >= -127.0f ? r : -127.0f;
          const float q = std::nearbyint(r);  // ties to even
          block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
        }
      }
      return;
  }
}

void kv_load_row(KvDtype t, const void* src, int64_t n, float* out) {
  const auto* in = static_cast<const uint8_t*>(src);
  switch (t) {
    case KvDtype::kF32: std::memcpy(out, in, 4 * n); return;
    case KvDtype::kF16:
    case KvDtype::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, in + 2 * i, 2);
        out[i] = t == KvDtype::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    case KvDtype::kQ8_0:
      for (int64_t b = 0; b < n / kKvQ8Block; ++b) {
        const uint8_t* block = in + b * kKvQ8BlockBytes;
        uint16_t dh;
        std::memcpy(&dh, block, 2);
        const float d = f16_to_f32(dh);
        for (int j = 0; j < kKvQ8Block; ++j) out[b * kKvQ8Block + j] = static_cast<int8_t>(block[2 + j]) * d;
      }
      return;
  }
}

}  // namespace pagoda

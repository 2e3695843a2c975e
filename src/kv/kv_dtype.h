// The element types the KV cache stores (--kv-cache-dtype), and the conversions between them and the f32 values the
// forward pass computes. Every stored value converts back to f32 exactly (f16 and bf16 are f32 subsets; a Q8_0
// value is an int8 times an f16 scale, a product with at most 19 significant bits), so the attention kernels read
// exact f32 values and their arithmetic, and its determinism, is the same for every type: only the rounding done
// once, when a row is stored, differs.
#pragma once

#include <cstdint>
#include <string>

#include "util/result.h"

namespace pagoda {

enum class KvDtype : uint8_t { kF32, kF16, kBF16, kQ8_0 };

constexpr KvDtype kDefaultKvDtype = KvDtype::kF16;
constexpr int32_t kKvQ8Block = 32;     // values per Q8_0 block
constexpr int32_t kKvQ8BlockBytes = 34;  // f16 scale + 32 int8

const char* kv_dtype_name(KvDtype t);  // "f32", "f16", "bf16", "q8_0"
// "f32" | "f16" | "bf16" | "q8_0" (case-insensitive); an error naming the value and the choices otherwise.
Result<KvDtype> parse_kv_dtype(const std::string& text);
// Whether a head of head_dim values can be stored in this type (Q8_0: a multiple of 32, so blocks never straddle
// heads); the error names the head size.
Status check_kv_head_dim(KvDtype t, int64_t head_dim);
// Bytes of n values (n a multiple of 32 for Q8_0).
int64_t kv_bytes(KvDtype t, int64_t n);

// Stores n f32 values (one token's K or V row) in type t: f16 and bf16 round to nearest even; Q8_0 per block of
// 32: d = max|x| / 127 stored as f16, q = x * (1 / d) rounded to nearest even (ggml's reference quantizer, except
// that it rounds ties away from zero) and clamped to [-127, 127] (NaN to 127). The portable definition; the
// forward pass stores through kernels/cpu/kv_store.h, which gives the same bytes.
void kv_store_row(KvDtype t, const float* x, int64_t n, void* dst);
// The exact f32 values of n stored values.
void kv_load_row(KvDtype t, const void* src, int64_t n, float* out);

}  // namespace pagoda

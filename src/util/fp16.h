// Portable scalar conversions between f32 and the 16-bit float formats stored in model files.
// Kernels use the hardware instructions; these serve loaders, writers and reference paths.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace pagoda {

inline float bits_to_f32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint32_t f32_to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    float v = std::ldexp(static_cast<float>(mant), -24);
    return (h & 0x8000) ? -v : v;
  }
  if (exp == 31) return bits_to_f32(sign | 0x7f800000u | (mant << 13));  // inf / nan
  return bits_to_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

// Round to nearest, ties to even; overflow gives inf; NaN stays NaN, quieted, with the top 9 bits of its payload
// (what F16C's vcvtps2ph gives).
inline uint16_t f32_to_f16(float f) {
  const uint32_t x = f32_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00 | static_cast<uint16_t>((abs >> 13) & 0x1ff);
  if (abs == 0x7f800000u) return sign | 0x7c00;
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {                       // below the smallest normal f16: subnormal or zero
    const float v = bits_to_f32(abs);
    const float scaled = v * 16777216.0f;  // in units of 2^-24, exact
    const uint32_t m = static_cast<uint32_t>(std::nearbyint(scaled));
    return sign | static_cast<uint16_t>(m);
  }
  uint32_t mant = abs & 0x7fffff;
  uint32_t exp = (abs >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // may carry into the exponent, which is correct
  return sign | static_cast<uint16_t>(h);
}

inline float bf16_to_f32(uint16_t b) { return bits_to_f32(static_cast<uint32_t>(b) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_to_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace pagoda

//===- Bfloat16.h - bfloat16 conversions of the CPU runtime -----*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// bfloat16 as the CPU runtime reads and writes it (the fused attention's
// reference, the emulated device program's GEMMs): the upper 16 bits of a
// float32, rounded to nearest with ties to even, as arith.truncf, cuBLAS
// and cuDNN round.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_RUNTIME_BFLOAT16_H
#define GA_LIB_RUNTIME_BFLOAT16_H

#include <cstdint>
#include <cstring>

namespace ga::runtime {

/// The float that the bfloat16 `bits` stand for (exact).
inline float bf16ToFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float x;
  std::memcpy(&x, &wide, sizeof(x));
  return x;
}

/// `x` rounded to the nearest bfloat16 (ties to even), as its bits; an
/// infinity stays one, a NaN stays a (quiet) NaN.
inline uint16_t floatToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  if ((bits & 0x7f800000u) == 0x7f800000u) // inf and NaN: keep (quiet NaN)
    return uint16_t(((bits & 0x007fffffu) ? bits | 0x00400000u : bits) >> 16);
  return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/// `x` rounded to the nearest bfloat16 (ties to even), as a float.
inline float roundToBf16(float x) { return bf16ToFloat(floatToBf16(x)); }

} // namespace ga::runtime

#endif // GA_LIB_RUNTIME_BFLOAT16_H

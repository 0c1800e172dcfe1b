// Element types and the conversions between them (SPEC §1.4, §2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gizml {

/// I4 packs two values a byte, the low nibble first. E4M3 is OCP FP8 E4M3FN (no infinities,
/// S.1111.111 is NaN, largest finite 448).
enum class DType : int { F32, F64, BF16, F16, E4M3, I8, I4, I32, I64, U8 };

std::string dtypeName(DType d);
/// Bits of one element (4 for I4). (Inline, as dtypeBytes: every op's checks ask, and a decode
/// step's small calls are mostly their checks.)
inline int dtypeBits(DType d) {
  switch (d) {
    case DType::F64: case DType::I64: return 64;
    case DType::F32: case DType::I32: return 32;
    case DType::BF16: case DType::F16: return 16;
    case DType::E4M3: case DType::I8: case DType::U8: return 8;
    case DType::I4: return 4;
  }
  return 0;
}
/// Bytes holding `count` elements (I4 rounds up to whole bytes).
inline std::size_t dtypeBytes(DType d, std::int64_t count) {
  if (count <= 0) return 0;
  const std::size_t n = static_cast<std::size_t>(count);
  return d == DType::I4 ? (n + 1) / 2 : n * static_cast<std::size_t>(dtypeBits(d) / 8);
}
bool isFloating(DType d);

// Scalar conversions, the same functions the kernels use (src/exact/convert.hpp).
/// Round to nearest even; NaN stays a quiet NaN; values past the largest finite go to ±inf.
std::uint16_t floatToBF16(float x);
float bf16ToFloat(std::uint16_t b);
/// Round to nearest even with subnormals; NaN stays a quiet NaN; overflow goes to ±inf.
std::uint16_t floatToF16(float x);
float f16ToFloat(std::uint16_t h);
/// Round to nearest even, saturating at ±448 (±inf too); NaN stays NaN (0x7f / 0xff).
std::uint8_t floatToE4M3(float x);
float e4m3ToFloat(std::uint8_t e);
/// rintf, then clamp to [-128, 127]; NaN gives 0.
std::int8_t floatToI8(float x);
/// rintf, then clamp to [-8, 7]; NaN gives 0.
std::int8_t floatToI4(float x);

}  // namespace gizml

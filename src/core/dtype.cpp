#include "gizml/dtype.hpp"

#include "exact/convert.hpp"

namespace gizml {

std::string dtypeName(DType d) {
  switch (d) {
    case DType::F32: return "F32";
    case DType::F64: return "F64";
    case DType::BF16: return "BF16";
    case DType::F16: return "F16";
    case DType::E4M3: return "E4M3";
    case DType::I8: return "I8";
    case DType::I4: return "I4";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
    case DType::U8: return "U8";
  }
  return "DType(" + std::to_string(static_cast<int>(d)) + ")";
}

bool isFloating(DType d) {
  return d == DType::F32 || d == DType::F64 || d == DType::BF16 || d == DType::F16 || d == DType::E4M3;
}

std::uint16_t floatToBF16(float x) { return exact::floatToBF16(x); }
float bf16ToFloat(std::uint16_t b) { return exact::bf16ToFloat(b); }
std::uint16_t floatToF16(float x) { return exact::floatToF16(x); }
float f16ToFloat(std::uint16_t h) { return exact::f16ToFloat(h); }
std::uint8_t floatToE4M3(float x) { return exact::floatToE4M3(x); }
float e4m3ToFloat(std::uint8_t e) { return exact::e4m3ToFloat(e); }
std::int8_t floatToI8(float x) { return static_cast<std::int8_t>(exact::roundClamp(x, -128, 127)); }
std::int8_t floatToI4(float x) { return static_cast<std::int8_t>(exact::roundClamp(x, -8, 7)); }

}  // namespace gizml

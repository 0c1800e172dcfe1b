// int8RowsProduct: the product of two matrices of 8-bit rows as int8Rows gives them (not in the
// SPEC, which has int8Rows, §3 "Diffusion norms and 8-bit rows"; include/gizml/netops/quant.hpp
// states its contract). Each output is an integer sum, exact in int32 in any order, then one
// conversion to F32 and two products by the rows' scales: the same bits wherever the sum runs —
// the host's 16-bit multiply-adds (product_host.cpp) or a GPU's dp4a and INT8 matrix cores (mma.sync
// m16n8k32 .s8, product_cuda.cu).
#pragma once

#include <cstdint>

#include "exact/convert.hpp"
#include "exact/hd.hpp"
#include "gizml/gpu.hpp"
#include "netops/quant/quant.hpp"

namespace gizml::netops::quant {

/// The largest k: |a b| <= 128 * 128 a term, so k terms stay within int32 (2^31 - 1) for k up to
/// 131071; the widths int8Rows gives are multiples of 256, the largest such 130816.
constexpr std::int64_t kMostProductK = 130816;

/// Element (i, j) of the product from its integer sum converted to F32 (nearest even, exact for
/// |sum| <= 2^24): (F32(sum) * sa[i]) * sb[j], then + bias[j] where there is a bias (one F32 add;
/// none without one, so a -0 product stays -0). F: a float, or the host's 16 lanes of them
/// (exact/vec16.hpp: the panels' epilogue), lane by lane the same formula.
template <class F>
GIZML_HD F int8ProductValue(F sum, F sa, F sb, const F* bias) {
  const F value = (sum * sa) * sb;
  return bias ? value + *bias : value;
}

/// Code p of a row of codes held as `codes` (F32 integers, I8, or I4 two a byte, low nibble first).
GIZML_HD int codeAt(const void* row, Codes codes, std::int64_t p) {
  if (codes == Codes::F32) return static_cast<int>(static_cast<const float*>(row)[p]);
  if (codes == Codes::I8) return static_cast<const std::int8_t*>(row)[p];
  const unsigned byte = static_cast<const std::uint8_t*>(row)[p / 2];
  return exact::i4Value(p % 2 == 0 ? byte : byte >> 4);
}
/// The bytes of a row of k codes.
GIZML_HD std::int64_t codeRowBytes(Codes codes, std::int64_t k) {
  return codes == Codes::F32 ? 4 * k : codes == Codes::I8 ? k : k / 2;
}

/// out [m, n] = int8ProductValue(Σ_p a[i, p] b[j, p], sa[i], sb[j]) (+ bias[j] where there is a
/// bias), F32 or (outBF16) rounded once to BF16; a [m, k] and b [n, k] codes, k a positive
/// multiple of 256 up to kMostProductK (checked by the public function, which also checks F32
/// codes are integers in [-128, 127]).
struct Int8RowsProduct {
  static constexpr const char* kName = "gizml::netops::int8RowsProduct";
  struct Args {
    const void* a;
    Codes aCodes;
    const float* sa;
    const void* b;
    Codes bCodes;
    const float* sb;
    std::int64_t m, n, k;
    const float* bias;  // [n], or nullptr for none
    void* out;          // F32, or BF16 where outBF16
    bool outBF16;
  };
  /// Stores out[row, col] from its integer sum: int8ProductValue (its bias included), rounded once
  /// to BF16 where outBF16.
  GIZML_HD static void store(const Args& a, std::int64_t row, std::int64_t col, std::int32_t sum) {
    const float value =
        int8ProductValue(static_cast<float>(sum), a.sa[row], a.sb[col], a.bias ? a.bias + col : nullptr);
    if (a.outBF16) static_cast<std::uint16_t*>(a.out)[row * a.n + col] = exact::floatToBF16(value);
    else static_cast<float*>(a.out)[row * a.n + col] = value;
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

}  // namespace gizml::netops::quant

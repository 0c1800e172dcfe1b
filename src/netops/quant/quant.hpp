// The 8-bit rows (SPEC §3 "Diffusion norms and 8-bit rows"): the regular Hadamard transform of
// rows, its row function written once for the host (16-lane vectors) and CUDA (a half-warp) on the
// shared row type and exact/hadamard.hpp, and its kernel struct (core/dispatch.hpp).
#pragma once

#include <cstdint>

#include "exact/hadamard.hpp"
#include "exact/hd.hpp"
#include "exact/row16.hpp"
#include "gizml/gpu.hpp"

namespace gizml::netops::quant {

// ---- the ops' kernels ----------------------------------------------------------------------------------

/// y = the regular Hadamard transform of each 256 values of each row of x [rows, n].
struct HadamardRows {
  static constexpr const char* kName = "gizml::netops::hadamardRows";
  struct Args {
    const float* x;
    std::int64_t rows, n;
    float* y;
  };
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    for (std::int64_t b = r * a.n; b < (r + 1) * a.n; b += exact::kHadamardBlock) {
      typename Row::F v[16];
      exact::loadBlock(row, a.x + b, v);
      exact::hadamard256(row, v);
      exact::storeBlock(row, a.y + b, v);
    }
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};


}  // namespace gizml::netops::quant

// The 8-bit rows: argument checks, the outputs, dispatch by device (core/dispatch.hpp), and the
// host paths (the row functions of quant.hpp on 16-lane vectors, OpenMP over rows). They equal
// tests/reference/quant_reference.cpp bit for bit.
#include <string>

#include "core/check.hpp"
#include "core/dispatch.hpp"
#include "exact/row16.hpp"
#include "gizml/netops/quant.hpp"
#include "netops/quant/quant.hpp"

namespace gizml::netops {

namespace quant {
void HadamardRows::host(const Args& a) { exact::hostRows<HadamardRows>(a); }
}  // namespace quant

namespace {

/// x F32 with rows of a positive multiple of 256 values, rank >= 1 (rank 2 when `matrix`).
void checkBlockRows(const char* fn, const char* arg, const Tensor& x, bool matrix) {
  detail::requireDType(fn, arg, x, DType::F32);
  if (matrix) detail::requireRank(fn, arg, x, 2);
  else detail::requireRankAtLeast(fn, arg, x, 1);
  const std::int64_t n = x.rowLength();
  if (n < 1 || n % exact::kHadamardBlock != 0)
    fail(fn, arg, "expected rows of a positive multiple of 256 values, got shape " + shapeString(x.shape()));
}

Tensor hadamardRowsOf(const char* fn, const char* arg, const Tensor& x) {
  checkBlockRows(fn, arg, x, false);
  Tensor y = Tensor::empty(x.shape(), DType::F32, x.device());
  detail::run<quant::HadamardRows>(detail::gpuOf(x), {x.data<float>(), x.rowCount(), x.rowLength(), y.data<float>()});
  return y;
}

}  // namespace

Tensor hadamardRows(const Tensor& x) { return hadamardRowsOf("gizml::netops::hadamardRows", "x", x); }

Tensor rotateWeightRows(const Tensor& w) { return hadamardRowsOf("gizml::netops::rotateWeightRows", "w", w); }

}  // namespace gizml::netops


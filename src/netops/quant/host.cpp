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
// The host keeps each row's transformed values for the codes' walk (Int8Rows::row), and streams
// F32 codes past the caches.
void Int8Rows::host(const Args& a) {
  exact::hostRowsHeld<Int8Rows>(a, a.n, a.codes == Codes::F32 && exact::aligned64(a.q));
}
void ModulatedInt8Rows::host(const Args& a) {
  exact::hostRowsHeld<ModulatedInt8Rows>(a, a.n, a.codes == Codes::F32 && exact::aligned64(a.q));
}
}  // namespace quant

namespace {

/// x F32 or BF16 with rows of a positive multiple of 256 values, rank >= 1 (rank 2 when `matrix`).
void checkBlockRows(const char* fn, const char* arg, const Tensor& x, bool matrix) {
  detail::requireDefined(fn, arg, x);
  if (x.dtype() != DType::F32 && x.dtype() != DType::BF16)
    fail(fn, arg, "expected dtype F32 or BF16, got " + dtypeName(x.dtype()));
  if (matrix) detail::requireRank(fn, arg, x, 2);
  else detail::requireRankAtLeast(fn, arg, x, 1);
  const std::int64_t n = x.rowLength();
  if (n < 1 || n % exact::kHadamardBlock != 0)
    fail(fn, arg, "expected rows of a positive multiple of 256 values, got shape " + shapeString(x.shape()));
}

quant::BlockRows blockRowsOf(const Tensor& x) {
  return {x.raw(), x.dtype() == DType::BF16, x.rowCount(), x.rowLength()};
}

Tensor hadamardRowsOf(const char* fn, const char* arg, const Tensor& x) {
  checkBlockRows(fn, arg, x, false);
  Tensor y = Tensor::empty(x.shape(), DType::F32, x.device());
  detail::run<quant::HadamardRows>(detail::gpuOf(x), {blockRowsOf(x), y.data<float>()});
  return y;
}

/// The codes' dtype where x is: F32 on the host; I8 (8 bits) or I4 (4 bits) on a GPU.
DType codesDType(const Tensor& x, int bits) {
  if (x.device().isHost()) return DType::F32;
  return bits == 8 ? DType::I8 : DType::I4;
}

void checkBits(const char* fn, int bits) {
  if (bits != 8 && bits != 4) fail(fn, "bits", "expected 8 or 4, got " + std::to_string(bits));
}

/// How q holds its codes: F32 integers, I8, or I4.
quant::Codes codesOf(const Tensor& q) {
  return q.dtype() == DType::F32 ? quant::Codes::F32 : q.dtype() == DType::I8 ? quant::Codes::I8 : quant::Codes::I4;
}

void int8RowsRun(const Tensor& x, const Tensor& q, const Tensor& s, int bits) {
  const float maxCode = bits == 8 ? 127.0f : 7.0f;
  detail::run<quant::Int8Rows>(detail::gpuOf(x),
                               {blockRowsOf(x), maxCode, -(maxCode + 1.0f), maxCode, codesOf(q), q.raw(), s.data<float>()});
}

}  // namespace

Tensor hadamardRows(const Tensor& x) { return hadamardRowsOf("gizml::netops::hadamardRows", "x", x); }

Tensor rotateWeightRows(const Tensor& w) { return hadamardRowsOf("gizml::netops::rotateWeightRows", "w", w); }

Int8RowsResult int8Rows(const Tensor& x, int bits) {
  const char* fn = "gizml::netops::int8Rows";
  checkBits(fn, bits);
  checkBlockRows(fn, "x", x, true);
  Int8RowsResult out{Tensor::empty(x.shape(), codesDType(x, bits), x.device()),
                     Tensor::empty({x.dim(0), 1}, DType::F32, x.device())};
  int8RowsRun(x, out.q, out.s, bits);
  return out;
}

namespace {
/// int8RowsInto's outputs for rows like x's: q (codes) and s ([rows, 1] F32) on x's device.
void checkCodes(const char* fn, const Tensor& x, const Tensor& q, const Tensor& s, int bits) {
  detail::requireDefined(fn, "q", q);
  detail::requireDefined(fn, "s", s);
  detail::requireSameDevice(fn, {{"x", &x}, {"q", &q}, {"s", &s}});
  detail::requireDType(fn, "q", q, codesDType(x, bits));
  detail::requireShape(fn, "q", q, x.shape());
  detail::requireDType(fn, "s", s, DType::F32);
  detail::requireShape(fn, "s", s, {x.dim(0), 1});
}
}  // namespace

void int8RowsInto(const Tensor& x, const Tensor& q, const Tensor& s, int bits) {
  const char* fn = "gizml::netops::int8RowsInto";
  checkBits(fn, bits);
  checkBlockRows(fn, "x", x, true);
  checkCodes(fn, x, q, s, bits);
  int8RowsRun(x, q, s, bits);
}

void modulatedInt8RowsInto(const Tensor& x, const Tensor& w, const Tensor& shift, const Tensor& scale, const Tensor& map,
                           double eps, const Tensor& y, const Tensor& q, const Tensor& s, bool centered, int bits) {
  const char* fn = "gizml::netops::modulatedInt8RowsInto";
  checkBits(fn, bits);
  norms::ModulatedNorm::Args norm = norms::checkModulated(fn, x, w, shift, scale, map, eps, centered);
  checkBlockRows(fn, "x", x, true);
  checkCodes(fn, x, q, s, bits);
  if (y.defined()) {
    detail::requireDType(fn, "y", y, DType::BF16);
    detail::requireShape(fn, "y", y, x.shape());
    detail::requireSameDevice(fn, {{"x", &x}, {"y", &y}});
    norm.yBF16 = y.data<std::uint16_t>();
  }
  const float maxCode = bits == 8 ? 127.0f : 7.0f;
  detail::run<quant::ModulatedInt8Rows>(detail::gpuOf(x), {norm, maxCode, -(maxCode + 1.0f), maxCode, codesOf(q), q.raw(),
                                                          s.data<float>(), norm.rows, norm.n, norm.mods});
}

}  // namespace gizml::netops

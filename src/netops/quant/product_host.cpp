// int8RowsProduct on the host, and the public functions (checks, outputs, dispatch).
//
// Each operand is first widened to 16-bit integers, a row of k a time, rows padded with zeros to
// the register block. The micro-kernel keeps MR x NR sums as vectors of 32-bit lanes and adds
// 16-bit products two at a time (vpmaddwd, or vpdpwssd with AVX-512 VNNI); an integer sum is exact
// in any order, so the lanes, the blocks of k and the threads' split change no bit. Blocking as
// the F32 GEMM's (gemm/host.cpp): a's MR rows (kc values each) stay in L1 while a panel of b's rows
// (half of L2, sized from the caches read at run time) streams from L2; a block of k's sums go to
// the output's memory as int32 bits between blocks, and the last block converts them. Threads take
// contiguous ranges of a's row blocks and never meet before the end.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <string>
#include <vector>

#include "core/caches.hpp"
#include "core/check.hpp"
#include "core/dispatch.hpp"
#include "gizml/netops/quant.hpp"
#include "netops/quant/product.hpp"

namespace gizml::netops::quant {

namespace {

// The machine's own vectors of 16-bit lanes (any width gives the same sums).
#if defined(__AVX512BW__)
using Lanes = __m512i;
constexpr int kMR = 4, kNR = 4, kLanes16 = 32;
inline Lanes zeroLanes() { return _mm512_setzero_si512(); }
inline Lanes loadLanes(const std::int16_t* p) { return _mm512_loadu_si512(p); }
inline Lanes multiplyAdd(Lanes acc, Lanes a, Lanes b) {
#if defined(__AVX512VNNI__)
  return _mm512_dpwssd_epi32(acc, a, b);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}
inline std::int32_t laneSum(Lanes v) { return _mm512_reduce_add_epi32(v); }
#elif defined(__AVX2__)
using Lanes = __m256i;
constexpr int kMR = 2, kNR = 4, kLanes16 = 16;  // 16 registers: 8 sums, 2 of a, 1 of b
inline Lanes zeroLanes() { return _mm256_setzero_si256(); }
inline Lanes loadLanes(const std::int16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline Lanes multiplyAdd(Lanes acc, Lanes a, Lanes b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
inline std::int32_t laneSum(Lanes v) {
  const __m128i four = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i two = _mm_add_epi32(four, _mm_shuffle_epi32(four, 0x4e));
  return _mm_cvtsi128_si32(_mm_add_epi32(two, _mm_shuffle_epi32(two, 0xb1)));
}
#else
using Lanes = std::int32_t;
constexpr int kMR = 2, kNR = 2, kLanes16 = 1;
inline Lanes zeroLanes() { return 0; }
inline Lanes loadLanes(const std::int16_t* p) { return *p; }
inline Lanes multiplyAdd(Lanes acc, Lanes a, Lanes b) { return acc + a * b; }
inline std::int32_t laneSum(Lanes v) { return v; }
#endif

/// rows x k codes widened to 16 bits, row-major, padded with zero rows to `padded` rows (each
/// kind its own loop, which the compiler vectorizes).
std::vector<std::int16_t> widened(const void* q, Codes codes, std::int64_t rows, std::int64_t k, std::int64_t padded) {
  std::vector<std::int16_t> out(static_cast<std::size_t>(padded * k), 0);
  std::int16_t* to = out.data();
  const std::int64_t count = rows * k;
  if (codes == Codes::F32) {
    const float* from = static_cast<const float*>(q);
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < count; ++i) to[i] = static_cast<std::int16_t>(from[i]);
  } else if (codes == Codes::I8) {
    const std::int8_t* from = static_cast<const std::int8_t*>(q);
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < count; ++i) to[i] = from[i];
  } else {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < count; ++i) to[i] = static_cast<std::int16_t>(codeAt(q, codes, i));
  }
  return out;
}

/// The MR x NR sums over `len` values (a multiple of kLanes16) of a's rows a, a + k, ... and b's
/// rows b, b + k, ...
inline void microSums(const std::int16_t* a, const std::int16_t* b, std::int64_t k, std::int64_t len,
                      std::int32_t (&sums)[kMR][kNR]) {
  Lanes acc[kMR][kNR];
  for (auto& row : acc)
    for (auto& v : row) v = zeroLanes();
  for (std::int64_t p = 0; p < len; p += kLanes16) {
    Lanes av[kMR];
    for (int i = 0; i < kMR; ++i) av[i] = loadLanes(a + i * k + p);
    for (int j = 0; j < kNR; ++j) {
      const Lanes bv = loadLanes(b + j * k + p);
      for (int i = 0; i < kMR; ++i) acc[i][j] = multiplyAdd(acc[i][j], av[i], bv);
    }
  }
  for (int i = 0; i < kMR; ++i)
    for (int j = 0; j < kNR; ++j) sums[i][j] = laneSum(acc[i][j]);
}

}  // namespace

void Int8RowsProduct::host(const Args& a) {
  const std::int64_t m = a.m, n = a.n, k = a.k;
  if (m == 0 || n == 0) return;
  const std::int64_t rowBlocks = (m + kMR - 1) / kMR, colBlocks = (n + kNR - 1) / kNR;
  const std::vector<std::int16_t> wa = widened(a.a, a.aCodes, m, k, rowBlocks * kMR);
  const std::vector<std::int16_t> wb = widened(a.b, a.bCodes, n, k, colBlocks * kNR);
  // kc: a's MR rows of kc values fill half of L1; a panel of b's rows half of L2.
  const detail::Caches& c = detail::caches();
  const std::int64_t kc = std::clamp<std::int64_t>((c.l1 / 2) / (2 * kMR) / 256 * 256, 256, k);
  const std::int64_t panelBlocks = std::max<std::int64_t>(1, (c.l2 / 2) / (2 * kc * kNR));
  const int threads = std::max(1, std::min<int>(omp_get_max_threads(), static_cast<int>(rowBlocks)));
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    const std::int64_t first = rowBlocks * t / count, last = rowBlocks * (t + 1) / count;
    for (std::int64_t k0 = 0; k0 < k; k0 += kc) {
      const std::int64_t len = std::min(kc, k - k0);
      const bool firstBlock = k0 == 0, lastBlock = k0 + len == k;
      for (std::int64_t jp = 0; jp < colBlocks; jp += panelBlocks)
        for (std::int64_t ib = first; ib < last; ++ib)
          for (std::int64_t jb = jp; jb < std::min(colBlocks, jp + panelBlocks); ++jb) {
            std::int32_t sums[kMR][kNR];
            microSums(wa.data() + ib * kMR * k + k0, wb.data() + jb * kNR * k + k0, k, len, sums);
            for (int i = 0; i < kMR && ib * kMR + i < m; ++i)
              for (int j = 0; j < kNR && jb * kNR + j < n; ++j) {
                const std::int64_t row = ib * kMR + i, col = jb * kNR + j;
                float& out = a.out[row * n + col];
                // Between blocks of k the output holds the sum so far as int32 bits.
                const std::int32_t sum = firstBlock ? sums[i][j] : std::bit_cast<std::int32_t>(out) + sums[i][j];
                out = lastBlock ? int8ProductValue(sum, a.sa[row], a.sb[col]) : std::bit_cast<float>(sum);
              }
          }
    }
  }
}

}  // namespace gizml::netops::quant

namespace gizml::netops {

namespace {

/// q: codes [rows, k] on a device (F32 integers in [-128, 127] on the host; I8 or I4 anywhere),
/// k a positive multiple of 256 up to kMostProductK; s: its scales, F32 [rows, 1].
void checkCodeRows(const char* fn, const char* qName, const Tensor& q, const char* sName, const Tensor& s) {
  detail::requireDefined(fn, qName, q);
  detail::requireRank(fn, qName, q, 2);
  const DType d = q.dtype();
  if (d != DType::I8 && d != DType::I4 && !(d == DType::F32 && q.device().isHost()))
    fail(fn, qName,
         std::string("expected codes as int8Rows gives them: I8 or I4") +
             (q.device().isHost() ? ", or F32 integers" : " on a GPU (F32 codes are the host's form)") + ", got " +
             dtypeName(d));
  const std::int64_t k = q.dim(1);
  if (k < 1 || k % 256 != 0 || k > quant::kMostProductK)
    fail(fn, qName,
         "expected rows of a positive multiple of 256 codes, at most " + std::to_string(quant::kMostProductK) +
             ", got shape " + shapeString(q.shape()));
  // A GPU reads the codes 16 bytes at a time: every row of whole 256 codes starts 16-byte aligned
  // where the first one does (any tensor gizml allocates, and its rows views).
  if (!q.device().isHost() && reinterpret_cast<std::uintptr_t>(q.raw()) % 16 != 0)
    fail(fn, qName, "expected codes starting 16-byte aligned on a GPU (a view into another tensor's rows?)");
  detail::requireDType(fn, sName, s, DType::F32);
  detail::requireShape(fn, sName, s, {q.dim(0), 1});
  if (d != DType::F32) return;
  // F32 codes: one vectorized pass over all (NaN fails the range), then, only where one is bad, a
  // second for the first bad one's place.
  const float* v = q.data<float>();
  const auto isCode = [](float c) { return (c >= -128.0f) & (c <= 127.0f) & (c == std::trunc(c)); };
  const std::int64_t count = q.numel();
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (std::int64_t i = 0; i < count; ++i) bad |= !isCode(v[i]);
  if (!bad) return;
  const std::int64_t i = std::find_if_not(v, v + count, isCode) - v;
  fail(fn, qName,
       "expected integer codes in [-128, 127], got " + std::to_string(v[i]) + " at [" + std::to_string(i / k) + ", " +
           std::to_string(i % k) + "]");
}

quant::Codes productCodesOf(const Tensor& q) {
  return q.dtype() == DType::F32 ? quant::Codes::F32 : q.dtype() == DType::I8 ? quant::Codes::I8 : quant::Codes::I4;
}

void checkProduct(const char* fn, const Tensor& qa, const Tensor& sa, const Tensor& qb, const Tensor& sb) {
  checkCodeRows(fn, "qa", qa, "sa", sa);
  checkCodeRows(fn, "qb", qb, "sb", sb);
  if (qb.dim(1) != qa.dim(1))
    fail(fn, "qb", "expected rows of qa's " + std::to_string(qa.dim(1)) + " codes, got shape " + shapeString(qb.shape()));
  detail::requireSameDevice(fn, {{"qa", &qa}, {"sa", &sa}, {"qb", &qb}, {"sb", &sb}});
}

void productRun(const Tensor& qa, const Tensor& sa, const Tensor& qb, const Tensor& sb, const Tensor& out) {
  detail::run<quant::Int8RowsProduct>(detail::gpuOf(qa),
                                      {qa.raw(), productCodesOf(qa), sa.data<float>(), qb.raw(), productCodesOf(qb),
                                       sb.data<float>(), qa.dim(0), qb.dim(0), qa.dim(1), out.data<float>()});
}

}  // namespace

Tensor int8RowsProduct(const Tensor& qa, const Tensor& sa, const Tensor& qb, const Tensor& sb) {
  const char* fn = "gizml::netops::int8RowsProduct";
  checkProduct(fn, qa, sa, qb, sb);
  Tensor out = Tensor::empty({qa.dim(0), qb.dim(0)}, DType::F32, qa.device());
  productRun(qa, sa, qb, sb, out);
  return out;
}

void int8RowsProductInto(const Tensor& qa, const Tensor& sa, const Tensor& qb, const Tensor& sb, const Tensor& out) {
  const char* fn = "gizml::netops::int8RowsProductInto";
  checkProduct(fn, qa, sa, qb, sb);
  detail::requireDType(fn, "out", out, DType::F32);
  detail::requireShape(fn, "out", out, {qa.dim(0), qb.dim(0)});
  detail::requireSameDevice(fn, {{"qa", &qa}, {"out", &out}});
  productRun(qa, sa, qb, sb, out);
}

}  // namespace gizml::netops

// The exact attention on a CUDA GPU: a query a half-warp, the same steps as the host
// (attention.hpp) so the same bits. Lane l computes the score of key 16 j + l of a block (its fma
// chain over d); the block's maximum is a shuffle tree over values with no NaN (order-free); every
// lane gathers the 16 weights and adds l in key order; then lane l updates the output channels
// l, l + 16, ... with a = fma(w'_j, v_j, a) in key order. `a` lives in the output row (each lane
// its own channels) until out = a / l. Not the fast path: the matrix-core kernel is to come.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "core/cuda_rows.cuh"
#include "netops/attention/attention.hpp"

namespace gizml::netops::attn {

namespace {

constexpr int kQueriesPerBlock = 8;

__global__ void attentionKernel(const Attention::Args a) {
  const int lane = static_cast<int>(threadIdx.x % 16);
  const unsigned mask = 0xffffu << (threadIdx.x & 16u);
  const std::int64_t queries = a.items * a.tq;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kQueriesPerBlock;
  const float negInf = -INFINITY;
  // The half-warp's lanes share the query, so they leave the loop together (shuffles need all 16).
  for (std::int64_t qid = static_cast<std::int64_t>(blockIdx.x) * kQueriesPerBlock + threadIdx.x / 16; qid < queries;
       qid += step) {
    const std::int64_t item = qid / a.tq, i = qid % a.tq;
    const float* q = a.q + itemOffset(a.lq, item, a.inner) + i * a.lq.row;
    const float* kBase = a.k + itemOffset(a.lk, item, a.inner);
    const float* vBase = a.v + itemOffset(a.lv, item, a.inner);
    float* out = a.out + itemOffset(a.lout, item, a.inner) + i * a.lout.row;
    const std::int64_t n = visibleKeys(i, a.tq, a.tk, a.causal);
    for (std::int64_t ch = lane; ch < a.e; ch += 16) out[ch] = 0.0f;
    if (n == 0) continue;
    float m = negInf, l = 0.0f;
    for (std::int64_t j0 = 0; j0 < n; j0 += kBlock) {
      const std::int64_t count = n - j0 < kBlock ? n - j0 : kBlock;
      const bool mine = lane < count;
      float s = 0.0f;
      if (mine) {
        const float* k = kBase + (j0 + lane) * a.lk.row;
        for (std::int64_t p = 0; p < a.d; ++p) s = fmaf(q[p], k[p], s);
        s = s * a.scale;
      }
      float top = (mine && s == s) ? s : negInf;
      for (int h = 8; h >= 1; h /= 2) {
        const float other = __shfl_xor_sync(mask, top, h, 16);
        top = other > top ? other : top;
      }
      const float mNew = runningMax(m, top);
      const float c = exact::exp(m - mNew);
      const float w = exact::exp(s - mNew);
      float wKept = w;
      bool kept = true;
      if (a.rate > 0.0f && mine) {
        kept = keepsWeight(drawWord(a.k0, a.k1, dropoutWord(item, i, j0 + lane, a.tq, a.tk)), a.rate);
        wKept = w * a.keepScale;
      }
      float ws[kBlock];
      bool keeps[kBlock];
      l = l * c;
      for (int j = 0; j < kBlock; ++j) {
        ws[j] = __shfl_sync(mask, wKept, j, 16);
        keeps[j] = __shfl_sync(mask, kept ? 1 : 0, j, 16) != 0;
        const float wj = __shfl_sync(mask, w, j, 16);
        if (j < count) l = l + wj;
      }
      for (std::int64_t ch = lane; ch < a.e; ch += 16) {
        float acc = out[ch] * c;
        for (int j = 0; j < count; ++j)
          if (keeps[j]) acc = fmaf(ws[j], vBase[(j0 + j) * a.lv.row + ch], acc);
        out[ch] = acc;
      }
      m = mNew;
    }
    for (std::int64_t ch = lane; ch < a.e; ch += 16) out[ch] = out[ch] / l;
  }
}

}  // namespace

void Attention::cuda(const Gpu& g, const Args& a) {
  const std::int64_t queries = a.items * a.tq;
  if (queries == 0) return;
  const std::int64_t blocks = (queries + kQueriesPerBlock - 1) / kQueriesPerBlock;
  detail::launch(g, kName, attentionKernel,
                 detail::Grid{detail::stridingBlocks(blocks), 16 * kQueriesPerBlock}, a);
}

// headPrepInPlace: a unit (one head of a row's q or k) a half-warp, prepUnit's row function.
void HeadPrepRows::cuda(const Gpu& g, const Args& a) { detail::launchRows<HeadPrepRows>(g, a); }

}  // namespace gizml::netops::attn

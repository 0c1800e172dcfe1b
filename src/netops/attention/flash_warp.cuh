// The warp's online-softmax step over a tile of 16 queries x 64 keys of scores as they lie in the
// mma C fragments, for both flash kernels (flash_cuda.cu, BF16; flash_quant_cuda.cu, INT8 / E4M3):
// flash_step.hpp's blockStep spread over the quad of 4 lanes that holds each row between them.
// Device only.
#pragma once

#include "exact/mma_layout.hpp"
#include "netops/attention/flash_step.hpp"

namespace gizml::netops::attn {

/// The half (0 or 1) of the warp's 16 rows that accumulator i of the lane's C fragment lies in: its
/// row less the lane's groupID, so that it folds to a constant for a constant i (a register index,
/// not a local-memory one).
__device__ __forceinline__ int rowHalfOf(int lane, int i) {
  return (exact::mma::fragmentC16x8(lane, i).row - exact::mma::groupId(lane)) >> 3;
}

/// s: this lane's scores of its two rows (rowHalfOf) over the tile's keys, scaled and masked
/// (maskedScore). Each row's new maximum over the quad (shuffles; a maximum is order-free), c =
/// rescaleFactor, l = l c; then s becomes p = blockWeight(s, m') and l adds this lane's p (the quad's
/// partial sums are added once, at the end). c[r] is what the caller's accumulators of row half r
/// are multiplied by before the tile's P V is added.
template <int Tiles>
__device__ __forceinline__ void softmaxTile(float (&s)[Tiles][4], OnlineRow (&state)[2], float (&c)[2], int lane) {
  float mNew[2] = {state[0].m, state[1].m};
#pragma unroll
  for (int nb = 0; nb < Tiles; ++nb)
#pragma unroll
    for (int i = 0; i < 4; ++i) mNew[rowHalfOf(lane, i)] = runningMax(mNew[rowHalfOf(lane, i)], s[nb][i]);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mNew[r] = runningMax(mNew[r], __shfl_xor_sync(0xffffffffu, mNew[r], 1));  // the quad holds the row
    mNew[r] = runningMax(mNew[r], __shfl_xor_sync(0xffffffffu, mNew[r], 2));
    c[r] = rescaleFactor(state[r].m, mNew[r]);
    state[r].m = mNew[r];
    state[r].l = state[r].l * c[r];
  }
#pragma unroll
  for (int nb = 0; nb < Tiles; ++nb)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = rowHalfOf(lane, i);
      const float p = blockWeight(s[nb][i], state[r].m);
      state[r].l = state[r].l + p;
      s[nb][i] = p;
    }
}

}  // namespace gizml::netops::attn

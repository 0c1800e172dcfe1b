// Test-only: one warp runs one real matrix-core instruction with its registers filled, and its
// result stored, through exact/mma_layout.hpp's maps (cudaMmaForTest, core/backend.hpp). On a GPU,
// tests/mma_layout_test.cpp compares the result with a plain product: the maps the host test
// checks by emulation are then checked against the hardware too.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/backend.hpp"
#include "core/cuda_launch.cuh"
#include "exact/mma_layout.hpp"
#include "exact/mma_ptx.cuh"

namespace gizml::detail {

namespace {

namespace mma = exact::mma;

struct MmaArgs {
  MmaForTest kind;
  const void* a;
  const void* b;
  void* d;
};

/// A [16][32] and B [32 k][8 n] bytes into the m16n8k32 registers, by the fragment maps.
__device__ void loadBytes(const std::uint8_t* A, const std::uint8_t* B, int lane, std::uint32_t (&a)[4],
                          std::uint32_t (&b)[2]) {
  for (int reg = 0; reg < 4; ++reg) {
    a[reg] = 0;
    for (int e = 0; e < 4; ++e) {
      const mma::RowCol at = mma::fragmentA16x32(lane, reg, e);
      a[reg] |= static_cast<std::uint32_t>(A[at.row * 32 + at.col]) << (8 * e);
    }
  }
  for (int reg = 0; reg < 2; ++reg) {
    b[reg] = 0;
    for (int e = 0; e < 4; ++e) {
      const mma::RowCol at = mma::fragmentB32x8(lane, reg, e);
      b[reg] |= static_cast<std::uint32_t>(B[at.row * 8 + at.col]) << (8 * e);
    }
  }
}

template <class T>
__device__ void storeD(void* d, int lane, const T (&acc)[4]) {
  for (int i = 0; i < 4; ++i) {
    const mma::RowCol at = mma::fragmentC16x8(lane, i);
    static_cast<T*>(d)[at.row * 8 + at.col] = acc[i];
  }
}

__global__ void mmaForTestKernel(const MmaArgs p) {
  const int lane = static_cast<int>(threadIdx.x);
  if (p.kind == MmaForTest::S8 || p.kind == MmaForTest::E4M3) {
    std::uint32_t a[4], b[2];
    loadBytes(static_cast<const std::uint8_t*>(p.a), static_cast<const std::uint8_t*>(p.b), lane, a, b);
    if (p.kind == MmaForTest::S8) {
      std::int32_t acc[4] = {0, 0, 0, 0};
      mma::mmaM16N8K32S8(acc, a, b[0], b[1]);
      storeD(p.d, lane, acc);
    } else {
#if GIZML_HAS_FP8_MMA
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      mma::mmaM16N8K32E4M3(acc, a, b[0], b[1]);
      storeD(p.d, lane, acc);
#endif
    }
    return;
  }
  // BF16: A [16][16], B [16 k][8 n].
  const auto* A = static_cast<const std::uint16_t*>(p.a);
  const auto* B = static_cast<const std::uint16_t*>(p.b);
  std::uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
  if (p.kind == MmaForTest::Bf16) {
    for (int reg = 0; reg < 4; ++reg)
      for (int h = 0; h < 2; ++h) {
        const mma::RowCol at = mma::fragmentA16x16(lane, reg, h);
        a[reg] |= static_cast<std::uint32_t>(A[at.row * 16 + at.col]) << (16 * h);
      }
    for (int reg = 0; reg < 2; ++reg)
      for (int h = 0; h < 2; ++h) {
        const mma::RowCol at = mma::fragmentB16x8(lane, reg, h);
        b[reg] |= static_cast<std::uint32_t>(B[at.row * 8 + at.col]) << (16 * h);
      }
  } else {
    // A by cp.async into its swizzled shared tile: 16 rows x 2 chunks, one chunk a lane.
    __shared__ __align__(16) std::uint16_t sa[16 * 16];
    __shared__ __align__(16) std::uint16_t sb[16 * 16];
    const bool trans = p.kind == MmaForTest::Bf16LdmatrixTrans;
    const mma::Chunk c = mma::copyChunkOf(lane, 0, 32, 2);
    mma::copyChunk16(sa + mma::swizzledOffset(c.row, 8 * c.chunk, 16), A + c.row * 16 + 8 * c.chunk);
    mma::commitCopies();
    // B as ldmatrix reads it: Bᵀ [16 n][16 k] (n >= 8 zero), or with .trans B [16 k][16 n] (n >= 8 zero).
    for (int e = lane; e < 256; e += 32) {
      const int r = e / 16, col = e % 16;
      const std::uint16_t v = trans ? (col < 8 ? B[r * 8 + col] : 0) : (r < 8 ? B[col * 8 + r] : 0);
      sb[mma::swizzledOffset(r, col, 16)] = v;
    }
    mma::waitCopies<0>();
    __syncthreads();
    const mma::RowCol at = mma::ldmatrixAddressA(lane);
    mma::ldmatrixX4<false>(a, sa + mma::swizzledOffset(at.row, at.col, 16));
    const mma::RowCol bt = trans ? mma::ldmatrixTransAddressB(lane) : mma::ldmatrixAddressB(lane);
    std::uint32_t r[4];
    if (trans) mma::ldmatrixX4<true>(r, sb + mma::swizzledOffset(bt.row, bt.col, 16));
    else mma::ldmatrixX4<false>(r, sb + mma::swizzledOffset(bt.row, bt.col, 16));
    b[0] = r[0];  // registers 0, 1: the B fragment of n 0-7
    b[1] = r[1];
  }
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  mma::mmaM16N8K16<true>(acc, a, b[0], b[1]);
  storeD(p.d, lane, acc);
}

}  // namespace

bool cudaMmaForTest(const Gpu& g, MmaForTest kind, const void* a, const void* b, void* d) {
  if (kind == MmaForTest::E4M3) {
    // The E4M3 instruction is in the kernel only where it was compiled for sm_89 or later (this
    // build's 90a; a GPU running the compute_80 PTX has none).
    cudaFuncAttributes attributes{};
    useDevice(g.device.index, "gizml::detail::mmaForTest");
    cudaCheck(cudaFuncGetAttributes(&attributes, mmaForTestKernel), "gizml::detail::mmaForTest");
    if (attributes.ptxVersion < 89) return false;
  }
  launch(g, "gizml::detail::mmaForTest", mmaForTestKernel, Grid{1, 32}, MmaArgs{kind, a, b, d});
  return true;
}

}  // namespace gizml::detail

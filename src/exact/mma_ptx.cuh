// The matrix-core and async-copy instructions as device functions, written once for every kernel
// that uses them (the GEMM's matrix-core path, the flash attention kernel, the instruction test of
// core/mma_for_test.cu). Which lane holds which element is exact/mma_layout.hpp's business; these
// only issue the PTX. CUDA only. In the GPU simulator's builds (GIZML_CUDA_SIM) each is the
// simulator's emulation of the instruction instead (src/sim/sim.cpp, from the PTX ISA's tables).
#pragma once

#if !defined(__CUDACC__)
#error "mma_ptx.cuh is CUDA-only"
#endif

#include <cstdint>

#if defined(GIZML_CUDA_SIM)

namespace gizml::exact::mma {

__device__ __forceinline__ void copyChunk16(void* dst, const void* src, bool in = true) {
  sim::copyAsync(dst, src, 16, in ? 16 : 0);
}
__device__ __forceinline__ void commitCopies() { sim::commitCopies(); }
template <int pending>
__device__ __forceinline__ void waitCopies() {
  sim::waitCopies(pending);
}
__device__ __forceinline__ void prefetchL2(const void* p, std::uint32_t bytes) { sim::prefetchL2(p, bytes); }
template <bool kTrans>
__device__ __forceinline__ void ldmatrixX4(std::uint32_t (&r)[4], const std::uint16_t* row) {
  sim::ldmatrixX4(r, row, kTrans);
}
template <bool kBF16>
__device__ __forceinline__ void mmaM16N8K16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                            std::uint32_t b1) {
  sim::mma(kBF16 ? sim::MmaKind::BF16 : sim::MmaKind::F16, d, a, b0, b1);
}
__device__ __forceinline__ void mmaM16N8K32S8(std::int32_t (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                              std::uint32_t b1) {
  sim::mma(sim::MmaKind::S8, d, a, b0, b1);
}
#define GIZML_HAS_FP8_MMA 1
__device__ __forceinline__ void mmaM16N8K32E4M3(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                std::uint32_t b1) {
  sim::mma(sim::MmaKind::E4M3, d, a, b0, b1);
}

}  // namespace gizml::exact::mma

#else  // the PTX

namespace gizml::exact::mma {

/// A generic pointer into shared memory as the 32-bit shared-space address PTX takes.
__device__ __forceinline__ unsigned sharedAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// cp.async.cg of one 16-byte chunk from global src to shared dst; with `in` false nothing is read
/// and the chunk is zero-filled (src-size 0).
__device__ __forceinline__ void copyChunk16(void* dst, const void* src, bool in = true) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sharedAddress(dst)), "l"(src), "r"(in ? 16 : 0)
               : "memory");
}
/// Closes this thread's group of cp.async copies issued since the last commit.
__device__ __forceinline__ void commitCopies() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
/// Waits until at most `pending` commit groups of this thread are still in flight.
template <int pending>
__device__ __forceinline__ void waitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

/// cp.async.bulk.prefetch.L2 of `bytes` at p (both multiples of 16): asks the L2 for them and goes
/// on, a hint that holds no register and no load slot (sm_90 on; below it nothing is asked). No
/// "memory" clobber: nothing is read or written, and a clobber orders the code around it (the
/// 8-bit codes' __stcs, whose asm has one, spilled 12 bytes).
__device__ __forceinline__ void prefetchL2(const void* p, std::uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(bytes));
#else
  (void)p, (void)bytes;
#endif
}

/// ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16 from this lane's row address.
template <bool kTrans>
__device__ __forceinline__ void ldmatrixX4(std::uint32_t (&r)[4], const std::uint16_t* row) {
  if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(sharedAddress(row)));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(sharedAddress(row)));
}

/// d += a b: mma.sync.aligned.m16n8k16, BF16 (kBF16) or F16 operands, F32 accumulators.
template <bool kBF16>
__device__ __forceinline__ void mmaM16N8K16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                            std::uint32_t b1) {
  if constexpr (kBF16)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// d += a b: mma.sync.aligned.m16n8k32, .s8 operands, .s32 accumulators (exact).
__device__ __forceinline__ void mmaM16N8K32S8(std::int32_t (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                              std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Whether this compilation has the FP8 (.e4m3) matrix-core instruction: sm_89 and later.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define GIZML_HAS_FP8_MMA 1
#else
#define GIZML_HAS_FP8_MMA 0
#endif

/// d += a b: mma.sync.aligned.m16n8k32, .e4m3 operands, .f32 accumulators (sm_89+; the hardware's
/// accumulation inside one instruction keeps fewer bits than F32). Where the compilation target
/// lacks it (sm_80) it traps: callers choose it only where the kernel was built with it.
__device__ __forceinline__ void mmaM16N8K32E4M3(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                std::uint32_t b1) {
#if GIZML_HAS_FP8_MMA
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  (void)d, (void)a, (void)b0, (void)b1;
  __trap();
#endif
}

}  // namespace gizml::exact::mma

#endif  // GIZML_CUDA_SIM

namespace gizml::exact::mma {

/// The sum over a quad, the 4 lanes (4 g .. 4 g + 3) that hold one row of a C fragment between
/// them: (v + lane ^ 1's) + lane ^ 2's, so all four end with the same bits.
__device__ __forceinline__ float quadSum(float v) {
  v = v + __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

}  // namespace gizml::exact::mma

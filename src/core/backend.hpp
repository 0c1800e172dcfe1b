// What the host-side core asks of the CUDA side (src/core/cuda.cu). In a build without CUDA no
// tensor can be on a GPU, so these are only reached with GIZML_HAS_CUDA; the no-CUDA definitions
// in device.cpp throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gizml/device.hpp"
#include "gizml/gpu.hpp"
#include "gizml/key.hpp"

namespace gizml::detail {

/// Whether the GPUs are the GPU simulator's (a GIZML_CUDA_SIM build, src/sim/): kernels run on the
/// CPU, slowly, so a test may sample what it would sweep on a GPU.
bool cudaSimulated();
/// The GPUs CUDA reports; when it reports an error, 0, with `problem` set to CUDA's own words.
int cudaDeviceCount(std::string& problem);
/// Device memory, stream-ordered on the device's default stream (cudaMallocAsync from a pool that
/// keeps what is freed), so a temporary freed right after its kernel is queued makes nobody wait.
void* cudaAllocate(int device, std::size_t bytes);
void cudaRelease(int device, void* p) noexcept;
/// Copies between any two of host and GPU memory, then waits for the copy. A copy to the host
/// (a result read back) also turns the device's error flag into gizml::Error.
void cudaCopy(void* dst, Device dstDevice, const void* src, Device srcDevice, std::size_t bytes);
/// Queues a copy of host memory to the device on g's stream; `src` may be freed on return (it is
/// staged first), and the host does not wait for the GPU.
void cudaUploadAsync(const Gpu& g, void* dst, const void* src, std::size_t bytes);
void cudaZero(int device, void* p, std::size_t bytes);
/// Every byte of [p, p + bytes) on the device set to `value` (Tensor::empty's poison).
void cudaFillBytes(int device, void* p, std::size_t bytes, int value);
/// Waits for the stream, then turns the device's error flag into gizml::Error.
void cudaSynchronize(const Gpu& g);
void cudaFillUniform(const Gpu& g, float* out, std::int64_t n, Key key);
void cudaFillNormal(const Gpu& g, float* out, std::int64_t n, Key key);

/// Throws when the CUDA call that returned `status` failed: "<function>: CUDA error <name>: <text>".
void cudaCheck(int status, const char* function);

/// The library was built without CUDA: a GPU path was asked for.
[[noreturn]] void noCuda(const std::string& function);

/// Test-only: out[i] = src[index[i]] for `count` indices held as F32 (the SPEC's row maps), on
/// the GPU; an index outside [0, n) sets the device error flag ("gizml::detail::gatherForTest:
/// index") and writes +0. It proves the flag's path from a kernel to gizml::Error.
void cudaGatherForTest(const Gpu& g, const float* src, std::int64_t n, const float* index, std::int64_t count,
                       float* out);

/// Test-only: out[i] = f(the float whose bits are firstBits + i) for i < count, on the GPU, by the
/// same GIZML_HD source the host runs (the device sweep over all 2^32 floats compares them).
enum class MathForTest { Exp, Log, Silu, Sigmoid, GeluTanh };
void cudaMathForTest(const Gpu& g, MathForTest f, std::uint32_t firstBits, std::int64_t count, float* out);

/// Test-only: one warp runs one matrix-core instruction, its registers filled and its D stored
/// through exact/mma_layout.hpp's maps (core/mma_for_test.cu). Device pointers, row-major:
///   Bf16 / Bf16Ldmatrix / Bf16LdmatrixTrans: a [16][16], b [16 k][8 n] BF16 bits, d [16][8] F32
///     (mma m16n8k16; the registers loaded directly, or by cp.async into a swizzled shared tile and
///     ldmatrix.x4, B from Bᵀ or with .trans);
///   S8: a [16][32], b [32 k][8 n] int8, d [16][8] int32; E4M3: the same in E4M3 bytes, d F32
///     (mma m16n8k32). Returns false, running nothing, where the build has no such instruction for
///     the GPU (E4M3 before sm_89).
enum class MmaForTest { Bf16, Bf16Ldmatrix, Bf16LdmatrixTrans, S8, E4M3 };
bool cudaMmaForTest(const Gpu& g, MmaForTest kind, const void* a, const void* b, void* d);

/// a * b + c as the library's own compiler flags build it (tests/build_flags_test.cpp: it must not
/// be fused into one fma).
float hostMultiplyAdd(float a, float b, float c);
/// {2048, 2048, 2048, 0} as the library's flags build it (GCC 12 with AVX-512 gets it wrong unless
/// SLP vectorization is off: cmake/ExactFP.cmake).
std::vector<std::int64_t> hostInitializerList();
/// The same on the GPU (device `device`), read back.
float cudaMultiplyAdd(int device, float a, float b, float c);

}  // namespace gizml::detail

#if GIZML_HAS_CUDA
#define GIZML_IF_CUDA(...) __VA_ARGS__
#else
#define GIZML_IF_CUDA(...) ::gizml::detail::noCuda(__func__)
#endif

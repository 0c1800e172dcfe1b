// What the host-side core asks of the CUDA side (src/core/cuda.cu). In a build without CUDA no
// tensor can be on a GPU, so these are only reached with GIZML_HAS_CUDA; the no-CUDA definitions
// in device.cpp throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "gizml/device.hpp"
#include "gizml/key.hpp"

namespace gizml::detail {

/// The GPUs CUDA reports; when it reports an error, 0, with `problem` set to CUDA's own words.
int cudaDeviceCount(std::string& problem);
void* cudaAllocate(int device, std::size_t bytes);
void cudaRelease(int device, void* p) noexcept;
/// Copies between any two of host and GPU memory, then waits for the copy.
void cudaCopy(void* dst, Device dstDevice, const void* src, Device srcDevice, std::size_t bytes);
void cudaZero(int device, void* p, std::size_t bytes);
void cudaSynchronize(int device, void* stream);
void cudaFillUniform(int device, float* out, std::int64_t n, Key key);
void cudaFillNormal(int device, float* out, std::int64_t n, Key key);

/// Throws when the CUDA call that returned `status` failed: "<function>: CUDA error: <text>".
void cudaCheck(int status, const char* function);

/// The library was built without CUDA: a GPU path was asked for.
[[noreturn]] void noCuda(const std::string& function);

}  // namespace gizml::detail

#if GIZML_HAS_CUDA
#define GIZML_IF_CUDA(...) __VA_ARGS__
#else
#define GIZML_IF_CUDA(...) ::gizml::detail::noCuda(__func__)
#endif

namespace gizml::detail {
/// a * b + c as the library's own compiler flags build it (tests/build_flags_test.cpp: it must not
/// be fused into one fma).
float hostMultiplyAdd(float a, float b, float c);
/// The same on the GPU (device `device`), read back.
float cudaMultiplyAdd(int device, float a, float b, float c);
}  // namespace gizml::detail

// gemm/batch.hpp on a CUDA GPU: one thread an output element, each computing it by its kernel
// struct's element() — the host's formula, so the same bits.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "netops/gemm/batch.hpp"

namespace gizml::netops::gemm {

namespace {

template <class K>
__global__ void copyKernel(const typename K::Args a) {
  const std::int64_t e = detail::globalThread();
  if (e < K::count(a)) a.out[e] = K::element(a, e);
}

__global__ void convBatchStoreKernel(const ConvBatchStore::Args a) {
  const std::int64_t e = detail::globalThread();
  if (e >= ConvBatchStore::count(a)) return;
  const float v = ConvBatchStore::element(a, e);
  if (a.outDType == DType::F32) static_cast<float*>(a.out)[e] = v;
  else static_cast<std::uint16_t*>(a.out)[e] = toHalfBits(v, a.outDType == DType::BF16);
}

}  // namespace

void Permute3::cuda(const Gpu& g, const Args& a) {
  if (count(a) > 0) detail::launch(g, kName, copyKernel<Permute3>, detail::Grid::forItems(count(a)), a);
}
void ConvPatches::cuda(const Gpu& g, const Args& a) {
  if (count(a) > 0) detail::launch(g, kName, copyKernel<ConvPatches>, detail::Grid::forItems(count(a)), a);
}
void ConvBatchStore::cuda(const Gpu& g, const Args& a) {
  if (count(a) > 0) detail::launch(g, kName, convBatchStoreKernel, detail::Grid::forItems(count(a)), a);
}

}  // namespace gizml::netops::gemm

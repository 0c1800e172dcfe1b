// The backward pass and the optimizer on a CUDA GPU: one thread an output element (a column for
// sumRows, a channel for sumChannels), each by its kernel struct's formula in grad.hpp — the
// host's, so the same bits. No atomics: every sum is one thread's chain.
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "netops/grad/grad.hpp"

namespace gizml::netops::grad {

namespace {

template <class K>
__global__ void elementsKernel(const typename K::Args a) {
  const std::int64_t e = detail::globalThread();
  if (e < K::count(a)) a.out[e] = K::element(a, e);
}

template <class K>
void launchElements(const Gpu& g, const typename K::Args& a) {
  if (K::count(a) > 0) detail::launch(g, K::kName, elementsKernel<K>, detail::Grid::forItems(K::count(a)), a);
}

__global__ void adamWKernel(const AdamW::Args a) {
  const std::int64_t e = detail::globalThread();
  if (e < a.count) adamWElement(a.s, a.p[e], a.g[e], a.m[e], a.v[e]);
}

}  // namespace

void ElementwiseOp::cuda(const Gpu& g, const Args& a) { launchElements<ElementwiseOp>(g, a); }
void SumRows::cuda(const Gpu& g, const Args& a) { launchElements<SumRows>(g, a); }
void SumChannels::cuda(const Gpu& g, const Args& a) { launchElements<SumChannels>(g, a); }
void AdamW::cuda(const Gpu& g, const Args& a) {
  if (a.count > 0) detail::launch(g, kName, adamWKernel, detail::Grid::forItems(a.count), a);
}

}  // namespace gizml::netops::grad

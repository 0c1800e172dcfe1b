// The convolution helpers on a CUDA GPU: one thread an output element, each computing it by its
// kernel struct's element() (conv.hpp), the same formula in the same order as the host, so the
// bits are the host's. col2im and col2im1d gather per output element (no atomics).
#include <cuda_runtime.h>

#include "core/cuda_launch.cuh"
#include "netops/conv/conv.hpp"

namespace gizml::netops::conv {

namespace {

/// a.out[e] = Op::element(a, e) for every output element, one thread each.
template <class Op>
__global__ void elementsKernel(const typename Op::Args a) {
  const std::int64_t e = detail::globalThread();
  if (e < Op::count(a)) a.out[e] = Op::element(a, e);
}

template <class Op>
void launchElements(const Gpu& gpu, const typename Op::Args& a) {
  const std::int64_t count = Op::count(a);
  if (count > 0) detail::launch(gpu, Op::kName, elementsKernel<Op>, detail::Grid::forItems(count), a);
}

}  // namespace

void Im2col::cuda(const Gpu& gpu, const Args& a) { launchElements<Im2col>(gpu, a); }
void Col2im::cuda(const Gpu& gpu, const Args& a) { launchElements<Col2im>(gpu, a); }
void Im2col1d::cuda(const Gpu& gpu, const Args& a) { launchElements<Im2col1d>(gpu, a); }
void Col2im1d::cuda(const Gpu& gpu, const Args& a) { launchElements<Col2im1d>(gpu, a); }
void Conv1d::cuda(const Gpu& gpu, const Args& a) { launchElements<Conv1d>(gpu, a); }
void ConvTranspose1d::cuda(const Gpu& gpu, const Args& a) { launchElements<ConvTranspose1d>(gpu, a); }

}  // namespace gizml::netops::conv

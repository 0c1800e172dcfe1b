// The attention family (SPEC §3 "Attention"). For now its causal mask, a host tensor; the
// attention ops come with their own issue.
#include <limits>

#include "core/sizes.hpp"
#include "gizml/netops/attention.hpp"

namespace gizml::netops {

Tensor causalMask(std::int64_t tq, std::int64_t tk) {
  const char* fn = "gizml::netops::causalMask";
  detail::requireAtLeast(fn, "tq", tq, 0);
  detail::requireAtLeast(fn, "tk", tk, 0);
  detail::checkedMul(fn, "tk", tq, tk);
  Tensor mask = Tensor::empty({tq, tk}, DType::F32, Device::host());
  float* m = mask.data<float>();
  const float negInf = -std::numeric_limits<float>::infinity();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < tq; ++i)
    for (std::int64_t j = 0; j < tk; ++j) m[i * tk + j] = j <= i + tk - tq ? 0.0f : negInf;
  return mask;
}

}  // namespace gizml::netops

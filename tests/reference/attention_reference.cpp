#include "reference/attention_reference.hpp"

#include <limits>

namespace gizml::reference {

void causalMask(std::int64_t tq, std::int64_t tk, float* out) {
  for (std::int64_t i = 0; i < tq; ++i)
    for (std::int64_t j = 0; j < tk; ++j)
      out[i * tk + j] = j <= i + tk - tq ? 0.0f : -std::numeric_limits<float>::infinity();
}

}  // namespace gizml::reference

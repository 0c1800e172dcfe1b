// gizml::netops, attention (SPEC §3 "Attention"). The attention ops themselves are to come; the
// causal mask is here, where a reader of attention looks for it.
#pragma once

#include <cstdint>

#include "gizml/tensor.hpp"

namespace gizml::netops {

/// A host F32 [tq, tk] mask: +0 where j <= i + tk - tq, else -inf (tq, tk >= 0).
Tensor causalMask(std::int64_t tq, std::int64_t tk);

}  // namespace gizml::netops

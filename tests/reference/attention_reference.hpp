// The literal reference of the attention family (SPEC §3 "Attention"): scalar loops, as the SPEC
// writes them. Test-only (and gizml-check's "host = reference").
#pragma once

#include <cstdint>

namespace gizml::reference {

/// [tq, tk]: 0 where j <= i + tk - tq, else -inf.
void causalMask(std::int64_t tq, std::int64_t tk, float* out);

}  // namespace gizml::reference

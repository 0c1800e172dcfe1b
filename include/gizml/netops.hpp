// gizml::netops — the operations of networks on tensors (SPEC §3), one header a family. Each op
// runs where its operands are; mixing devices is an error. Every op here is exact: the same bits on
// the host (any thread count, any SIMD width, any batch) and on a CUDA GPU — where a result is NaN,
// it is NaN on every device, its sign and payload aside (x86 and CUDA make different NaNs).
#pragma once

#include "gizml/netops/attention.hpp"
#include "gizml/netops/conv.hpp"
#include "gizml/netops/gemm.hpp"
#include "gizml/netops/grad.hpp"
#include "gizml/netops/norms.hpp"
#include "gizml/netops/pool.hpp"
#include "gizml/netops/quant.hpp"
#include "gizml/netops/rows.hpp"
#include "gizml/netops/step.hpp"

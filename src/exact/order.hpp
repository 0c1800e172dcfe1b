// The fixed reduction orders of SPEC §1.3 that host, reference and CUDA share.
#pragma once

#include "exact/hd.hpp"

namespace gizml::exact {

/// The end of sum16 / dot16: lane[i] += lane[i + h] for i < h, h = 8, 4, 2, 1; returns lane[0].
/// (A half-warp does the same with shfl_xor 8, 4, 2, 1: float addition is commutative.)
GIZML_HD float treeSum16(float lane[16]) {
  for (int h = 8; h >= 1; h /= 2)
    for (int i = 0; i < h; ++i) lane[i] += lane[i + h];
  return lane[0];
}

/// The argmax order (SPEC §1.3, Tensor.argmax): is (value a at index ia) a better maximum than
/// (value b at index ib)? NaN never wins; a larger value wins; equal values take the lower index.
/// Order-free: any grouping of the comparisons gives the same winner.
GIZML_HD bool argmaxBetter(float a, long long ia, float b, long long ib) {
  if (a != a) return false;
  if (b != b) return true;
  if (a > b) return true;
  if (a < b) return false;
  return ia < ib;
}

}  // namespace gizml::exact

// The quantization arithmetic of attentionRows' quantized GPU path (SPEC §3 "Attention", the
// SageAttention2 split), written once as GIZML_HD functions: the CUDA kernels of flash_quant_cuda.cu
// call them, and tests/sage_quant_test.cpp runs the whole algorithm on the host from them (an
// emulation whose accuracy against the exact attendedRows is the SPEC's tolerance).
//
// Per (group, head), with d = head (64 or 128) and the group's tk keys:
//   1. K less its mean: mean_c = sum_c / tk, k'_jc = k_jc - mean_c, where sum_c is the F32 sum of
//      the blocks of 64 keys' sums (each in key order), in block order: the blocks' sums are
//      independent (many threads on the GPU), their order fixed.
//      Softmax is invariant to it: q·(k_j - mean) = q·k_j - q·mean and q·mean is the same for every
//      key of a query's row. It removes the large per-channel offsets that real keys carry (and
//      that would otherwise take most of INT8's range and leave the differences between keys a few
//      codes wide). Fixed-order sums: no atomics, the same bits every run and in the host emulation.
//   2. Q and K' to INT8, one scale per block of rows: scale = max|x| / 127 over the block, code =
//      x / scale rounded to nearest even and saturated to [-127, 127] (0 when the block is all
//      zeros). Blocks follow the kernel's tiles (offsets from the group's first row): Q a block of
//      16 rows (one warp's rows of the mma: its scale is a single register), K' a block of 64 keys
//      (one tile of keys in shared memory).
//   3. S = Q K'ᵀ on INT8 matrix cores, exact in int32 (|dot| <= 127^2 * 128 < 2^24, so its F32
//      value is exact too), then s = F32(dot) * ((qScale * kScale) * softmaxScale).
//   4. The online softmax of flash_step.hpp over blocks of 64 keys: p = exp(s - m') in [0, 1]; l
//      sums the F32 p. P times 448 (E4M3's largest value: the codes use the whole range, the
//      largest p of a row is exactly 448) to E4M3.
//   5. V to E4M3 with one scale a channel over the group's keys: vScale_c = max_j |v_jc| / 448,
//      code = E4M3(v / vScale) (0 for an all-zero channel).
//   6. P V on E4M3 matrix cores with F32 accumulators, SageAttention2's two-level accumulation: the
//      64 keys of a block are summed into fresh accumulators (two m16n8k32 steps), then added to the
//      running output after its online-softmax rescale: o = o c + block. The FP8 instruction's own
//      accumulation is not IEEE F32 (fewer bits are kept inside it), so it only ever sums 64 terms
//      of similar size; the long sum over the group's keys is done in plain F32 adds.
//   7. out = ((o / l) * vScale_c) / 448.
// F32 <-> E4M3 is exact/convert.hpp's floatToE4M3 / e4m3ToFloat (round to nearest even, saturating
// to ±448, NaN kept: cvt.rn.satfinite.e4m3x2.f32's result), tested exhaustively against a float64
// definition in tests/sage_quant_test.cpp.
#pragma once

#include <cstdint>

#include "exact/convert.hpp"
#include "exact/hd.hpp"

namespace gizml::netops::attn {

/// Rows of Q a scale covers (a warp's 16 rows of the m16n8k32 product).
constexpr int kSageQBlock = 16;
/// Keys of K a scale covers, and the keys of one two-level accumulation block (a tile of keys).
constexpr int kSageKBlock = 64;
/// E4M3's largest finite value, P's scale and V's range.
constexpr float kE4M3Max = 448.0f;
/// The INT8 codes' range is [-127, 127] (symmetric: -128 is never produced).
constexpr int kInt8Max = 127;

/// The channel mean of K over the group's keys from their F32 sum in key order.
GIZML_HD float keyMean(float sum, std::int64_t keys) { return sum / static_cast<float>(keys); }
/// A key value less its channel's mean.
GIZML_HD float centeredKey(float k, float mean) { return k - mean; }

/// The INT8 scale of a block whose largest magnitude is maxAbs.
GIZML_HD float int8Scale(float maxAbs) { return maxAbs / static_cast<float>(kInt8Max); }
/// x's INT8 code under `scale`: x / scale to nearest even, saturated; 0 for a zero scale (an
/// all-zero block) and for NaN.
GIZML_HD std::int8_t int8Code(float x, float scale) {
  return static_cast<std::int8_t>(scale == 0.0f ? 0 : exact::roundClamp(x / scale, -kInt8Max, kInt8Max));
}

/// The factor of an integer Q K'ᵀ dot product: (qScale kScale) times the softmax scale.
GIZML_HD float scoreScale(float qScale, float kScale, float softmaxScale) { return (qScale * kScale) * softmaxScale; }
/// A score from its int32 dot product (exact in F32: |dot| < 2^24).
GIZML_HD float quantScore(std::int32_t dot, float factor) { return static_cast<float>(dot) * factor; }

/// V's scale of a channel whose largest magnitude over the group's keys is maxAbs.
GIZML_HD float vScaleOf(float maxAbs) { return maxAbs / kE4M3Max; }
/// v's E4M3 code under its channel's scale; +0 for a zero scale.
GIZML_HD std::uint8_t vCode(float v, float scale) { return scale == 0.0f ? 0 : exact::floatToE4M3(v / scale); }

/// A softmax weight p in [0, 1] as the E4M3 code of p 448.
GIZML_HD std::uint8_t pCode(float p) { return exact::floatToE4M3(p * kE4M3Max); }

/// The two-level accumulation's outer step: the running output rescaled, plus a block's sum.
GIZML_HD float addBlock(float o, float c, float block) {
  const float rescaled = o * c;
  return rescaled + block;
}

/// The output element from the running sum o (in units of 448 vScale), l and the channel's scale;
/// +0 for a query that sees no key.
GIZML_HD float sageOutput(float o, float l, float vScale, bool seesAnyKey) {
  return seesAnyKey ? ((o / l) * vScale) / kE4M3Max : 0.0f;
}

/// The heads the quantized path runs (SPEC: heads of 64 or 128; others take the BF16 path).
GIZML_HD bool sageHead(std::int64_t head) { return head == 64 || head == 128; }

}  // namespace gizml::netops::attn

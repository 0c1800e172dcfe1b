// attentionRows' quantized GPU path (SPEC §3 "Attention", SageAttention2's split), in
// flash_quant_cuda.cu; the arithmetic is sage_quant.hpp's. Chosen by rows.cpp's fastGpuPath when
// `quantized` is set, the head is 64 or 128 (the SPEC's heads; others take the BF16 path) and
// SageRows::available (the kernel that runs on the device was compiled for sm_89 or later: it has
// the FP8 matrix-core instruction); otherwise the BF16 flash path (flash.hpp) runs.
//
// Launches, all on the caller's stream, each writing its own buffers (no atomics):
//   stats     K's channel mean and V's channel scale (max |v| / 448) over the group's keys: one
//             thread a (group, head, block of 64 keys, channel) sums the block's keys in key order and
//             takes their max |v|, then one thread a (group, head, channel) adds the blocks' sums in
//             block order (sage_quant.hpp's definition) and takes their maximum;
//   scales    one warp a block: Q's INT8 scale of each 16 rows, K's (less its mean) of each 64 keys
//             (max |x| / 127; a maximum is order-free);
//   codes     Q and K' to INT8 [heads][rows][head]; V to E4M3 (its own launch, a tile of 64 keys x
//             64 channels a block, transposed through shared memory), to [heads][group index]
//             [head][tkPad] (tkPad = the group's keys rounded up to 64, +0 past them) with the keys of
//             each 32 permuted as mma::accumulatorColumnOfA16x32 says, so that the P V product's B
//             operand loads by ldmatrix without a transpose (ldmatrix .trans moves 16-bit elements
//             only) and its rows match P's columns as they lie in the registers;
//   attention the flash kernel on INT8 (Q K'ᵀ) and E4M3 (P V) matrix cores.
#pragma once

#include <cstdint>

#include "exact/hd.hpp"
#include "gizml/gpu.hpp"

namespace gizml::netops::attn {

struct SageRows {
  static constexpr const char* kName = "gizml::netops::attentionRows (quantized)";
  struct Args {
    const void* qkv;  // [rows, 3 heads head], F32 or BF16, prep already applied
    bool qkvBF16;
    void* out;  // [outRows, heads head], F32 or BF16
    bool outBF16;
    std::int64_t rows, heads, head, group, outRows;  // head 64 or 128; group divides rows
    float scale;                                     // F32(1 / sqrt(head))
    // Workspace (device memory, written by the launches before the attention kernel):
    std::int8_t* qCodes;    // [heads][rows][head]
    std::int8_t* kCodes;    // [heads][rows][head], K less its group's channel mean
    std::uint8_t* vCodes;   // [heads][groups][head][tkPad], E4M3, keys permuted within each 32
    float* qScales;         // [heads][groups][qBlocks]
    float* kScales;         // [heads][groups][kBlocks]
    float* kBlockSums;      // [heads][groups][kBlocks][head]: each block's K sum
    float* vBlockMaxes;     // [heads][groups][kBlocks][head]: each block's max |v|
    float* kMeans;          // [heads][groups][head]
    float* vScales;         // [heads][groups][head]
  };
  /// The workspace's sizes for these shapes (elements).
  static GIZML_HD std::int64_t groups(const Args& a) { return a.rows / a.group; }
  static GIZML_HD std::int64_t tkPad(const Args& a) { return (a.group + 63) / 64 * 64; }
  static GIZML_HD std::int64_t qBlocks(const Args& a) { return (a.group + 15) / 16; }
  static GIZML_HD std::int64_t kBlocks(const Args& a) { return (a.group + 63) / 64; }
  /// Whether g's device runs the FP8 kernel (its code for that device was compiled for sm_89+).
  static bool available(const Gpu& g);
  /// All six launches.
  static void run(const Gpu& g, const Args& a);
};

}  // namespace gizml::netops::attn

// attentionRows' fast GPU path (SPEC §3 "Attention", BF16): flash attention on matrix cores, in
// flash_cuda.cu. The host never runs it (its attentionRows is the exact op), so these structs have
// only a launcher. Two launches: pack copies q, k and v of qkv (F32 or BF16, prep already applied)
// into BF16 panels [3][heads][rows][dPad] (head zero-padded to dPad, 64 or 128: any head <= 128 runs,
// the zeros add nothing to q·k and give output columns that are not stored); then the flash kernel,
// a block a tile of 64 queries of one (group, head).
#pragma once

#include <cstdint>

#include "gizml/gpu.hpp"

namespace gizml::netops::attn {

/// The widest head the fast path runs; heads are padded to 64 or to this.
constexpr std::int64_t kFlashMaxHead = 128;

/// The padded head of the BF16 panels: 64 for head <= 64, else 128 (head <= kFlashMaxHead).
inline std::int64_t flashPaddedHead(std::int64_t head) { return head <= 64 ? 64 : 128; }

struct FlashRows {
  static constexpr const char* kName = "gizml::netops::attentionRows";
  struct Args {
    const void* qkv;          // [rows, 3 heads head], F32 or BF16
    bool qkvBF16;
    std::uint16_t* panels;    // [3][heads][rows][dPad] BF16, written by pack, read by run
    void* out;                // [outRows, heads head], F32 or BF16
    bool outBF16;
    std::int64_t rows, heads, head, dPad, group, outRows;
    float scale;              // F32(1 / sqrt(head))
  };
  /// qkv into the panels (each value rounded once to BF16; pad columns +0).
  static void pack(const Gpu& g, const Args& a);
  /// The flash kernel, panels into out.
  static void run(const Gpu& g, const Args& a);
};

}  // namespace gizml::netops::attn

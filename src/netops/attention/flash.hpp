// The fast GPU paths of attention (SPEC §3 "Attention", BF16): flash attention on matrix cores, in
// flash_cuda.cu, one kernel template for three ops. The host never runs it (its ops are the exact
// ones), so these structs have only launchers. Two launches an op: pack copies the op's q, k and v
// (F32 or BF16, prep already applied) into BF16 panels [units][rows][dPad] (a unit is one head of q,
// k or v; the head zero-padded to dPad, 64 or 128: any head <= 128 runs, the zeros add nothing to
// q·k and give output columns that are not stored); then the flash kernel, a block a tile of 64
// queries of one head, over the keys that FlashKeys says the tile sees:
//   Groups        attentionRows (groups of rows of one qkv) and crossAttentionRows (one group: the
//                 queries from q, the keys and values from kv, nq != nk);
//   Neighborhood  neighborhood3d: the box of keys the tile's 64 consecutive queries see
//                 (neighborhood_window.hpp), gathered a row at a time, each (query, key) masked to
//                 the query's window.
#pragma once

#include <cstdint>

#include "gizml/gpu.hpp"
#include "netops/attention/neighborhood_window.hpp"

namespace gizml::netops::attn {

/// The widest head the fast path runs; heads are padded to 64 or to this.
constexpr std::int64_t kFlashMaxHead = 128;

/// The padded head of the BF16 panels: 64 for head <= 64, else 128 (head <= kFlashMaxHead).
inline std::int64_t flashPaddedHead(std::int64_t head) { return head <= 64 ? 64 : 128; }

/// Rows of a matrix into BF16 panels [units][rows][dPad]: unit u of row r is the `head` values at
/// src + r rowStride + u head, each rounded once to BF16 (an F32 source); pad columns +0.
struct FlashPack {
  const void* src;
  bool srcBF16;
  std::uint16_t* panels;
  std::int64_t rows, units, head, dPad, rowStride;
};

/// Which keys a tile of queries sees (see the top of this file).
enum class FlashKeys { Groups, Neighborhood };

/// The flash kernel's parameters, one struct (FlashAttention's Flash_fwd_params).
struct FlashParams {
  const std::uint16_t *q, *k, *v;  // BF16 panels; head h's rows [rows][dPad] at q + h qHead, k + h kvHead, ...
  std::int64_t qHead, kvHead;
  void* out;                        // [queries, heads head], F32 or BF16
  bool outBF16;
  std::int64_t heads, head, dPad;
  std::int64_t queries;             // the rows of out
  // Groups: group g's queries are q's rows [g qGroup, min((g + 1) qGroup, queries)), its keys k's
  // (and v's) rows [g kGroup, (g + 1) kGroup).
  std::int64_t qGroup, kGroup;
  Grid3 grid;                       // Neighborhood: queries = T H W, keys the same rows
  float scale;
};

/// The launchers; `fn` names the op in a launch's error.
void flashPack(const Gpu& g, const char* fn, const FlashPack& a);
void flashRun(const Gpu& g, const char* fn, FlashKeys keys, const FlashParams& a);

/// attentionRows' two launches on qkv [rows, 3 heads head] (rows.cpp's fast path): panels
/// [3][heads][rows][dPad], then the Groups kernel.
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

// How a GPU runs one row op's rows: the forms of the row kernels that give the same bits and differ
// only in speed (README "Row plans"). Each op has a plan of its own, so that a GPU session that
// finds, say, a block a row fastest for modulatedNorm and a prefetching half-warp for int8Rows can
// make both the defaults, and measure that mix before it does (tools/gpu-rows-sweep.sh's last run).
//
// Where a plan comes from, each later one over the one before:
//   1. every field's default (below: the forms the first GPU session measured);
//   2. kMeasuredRowPlans (row_plan.cpp): what GPU sessions found fastest, op by op;
//   3. GIZML_CUDA_ROW_PLAN="op=run,op=run,...": a plan for each op named;
//   4. each field's own switch where it is set (GIZML_CUDA_ROW_BLOCKS, ...), for every op at once:
//      the sweep's runs and CI's runs of each form on the simulator.
// A run is named as the sweep names its runs: N (N rows a multiprocessor, 0 all at once), bN (a
// block a row, at most N a multiprocessor), pN (a half-warp a row prefetching its row, at most N
// rows a multiprocessor), qN (a half-warp a row whose values walk takes quads, at most N rows a
// multiprocessor), bqN (a block a row whose values walk takes quads), s (the 8-bit rows by
// shuffles), gL (groupNorm in one launch, L groups ahead), bgL (the same with a block's deeper
// ring).
// Host code: the host-only build parses and tests plans too (row_plan_test), though only a GPU's
// launches read them.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gizml::detail {

/// One row op's form on a GPU.
struct RowPlan {
  /// A block a row (a tile of pixels for pixelNorm; for groupNorm a block a chunk of a channel and a
  /// deeper ring for its slices) where the op has that form (core/cuda_row_blocks.cuh), else a
  /// half-warp a row. GIZML_CUDA_ROW_BLOCKS=0|1.
  bool blocks = false;
  /// The 8-bit rows' half-warp rows take their blocks by rows (quant/cuda.cu), not by shuffles as
  /// the row functions do. GIZML_CUDA_BY_ROWS=0|1.
  bool byRows = true;
  /// A half-warp asks the L2 for the row it reads twice as it starts it (detail::prefetchRow,
  /// core/cuda_rows.cuh). GIZML_CUDA_L2_PREFETCH=0|1.
  bool prefetch = false;
  /// The values walk takes each thread's 4 consecutive elements a step (16-byte loads and stores of
  /// F32, 8-byte of BF16: exact::QuadWarpRow::forEachQuadFrom), not one element, where the op's row
  /// function has such a walk (layerNorm, rmsNorm, modulatedNorm, gatedNormAddInto,
  /// rowNormRopeInto, groupNorm's second pass: Kernel::kValuesInQuads; with a block a row the same
  /// but rowNormRopeInto and groupNorm: TakesStagedQuads) and its rows are so aligned.
  /// GIZML_CUDA_QUADS=0|1.
  bool quads = false;
  /// At most this many rows a multiprocessor at once, the grid striding over the rest (for a block
  /// a row, blocks); 0: no such limit. GIZML_CUDA_ROWS_PER_SM=N.
  long rowsPerSm = 0;
  /// groupNorm in one launch, its first pass at most this many groups ahead of its second
  /// (norms/cuda.cu, "ahead"); 0: two launches. GIZML_CUDA_GROUP_NORM_AHEAD=L.
  long ahead = 0;

  bool operator==(const RowPlan&) const = default;
};

/// The most rows a multiprocessor a plan may name, and the most groups ahead.
constexpr long kMostRowsPerSm = 1L << 20;
constexpr long kMostGroupsAhead = 1024;

/// The plan a run's name gives (above: "0", "b4", "p32", "q0", "bq0", "s", "g8", "bg8"); anything
/// else is a gizml::Error naming `source` (where the name was written) and the names it takes.
RowPlan rowPlanOfRun(std::string_view run, std::string_view source);

/// The row ops that can be given a plan of their own: their names as the ops are called, a
/// launch's function name (Kernel::kName) without its "gizml::netops::".
const std::vector<std::string_view>& plannedRowOps();

/// The plans of "op=run,op=run,..." (spaces around either allowed; empty: none), each over the
/// defaults; an op not in plannedRowOps, an op named twice or a bad run is a gizml::Error naming
/// `source`.
std::map<std::string, RowPlan, std::less<>> rowPlansOf(std::string_view spec, std::string_view source);

/// The plan of the row op whose launches name `function` (a Kernel::kName, "gizml::netops::..."):
/// steps 1 - 4 above, read once a process (a bad switch or plan: a gizml::Error at every call). An
/// op that is not in plannedRowOps takes the defaults and the switches.
const RowPlan& rowPlan(std::string_view function);

}  // namespace gizml::detail

// The diffusion norms' cases (SPEC §3 "Diffusion norms and 8-bit rows"): widths around the 16
// lanes and their multiples (pixels for pixelNorm), more rows than one GPU block, NaN / ±inf / -0
// in the data, row maps that use every modulation.
#include <algorithm>

#include "reference/norms_reference.hpp"
#include "registry/registry.hpp"
#include "support/inputs.hpp"

namespace gizml::registry {

namespace {

namespace ref = reference;
using test::host;
using test::randomFloats;
using test::withSpecials;

constexpr std::int64_t kMods = 3;
constexpr double kEps = 1e-6;

struct NormShape {
  std::int64_t rows, n;
  bool typical = false;
  std::uint32_t seed() const { return static_cast<std::uint32_t>(rows * 10000 + n); }
  std::string name() const { return dims({rows, n}); }
};
// {3, 6144}: rows of 24 KiB, two of which a GPU block a row stages (GIZML_CUDA_ROW_BLOCKS=1): 48
// KiB of dynamic shared memory beside the kernel's static bytes, which it may take only when asked.
const NormShape kShapes[] = {{1, 1},   {3, 2},    {2, 15},   {3, 16},   {4, 17},   {3, 255},   {2, 256},
                             {5, 257}, {2, 4097}, {37, 257}, {300, 17}, {64, 1024, true}, {3, 6144}};

Tensor specialRows(Key key, const NormShape& s) { return host(withSpecials(key, s.rows * s.n), {s.rows, s.n}); }
/// A row map over kMods modulations: integers as F32, from the key's words.
Tensor rowMap(Key key, std::int64_t rows) {
  std::vector<float> map;
  for (std::int64_t label : test::randomLabels(key, rows, kMods)) map.push_back(static_cast<float>(label));
  return host(map, {rows});
}
Tensor modulations(Key key, const NormShape& s) { return host(randomFloats(key, kMods * s.n, 0.5f), {kMods, s.n}); }

/// modulatedNorm's inputs {x, w, shift, scale, map}; into BF16 when `intoBF16`, else the op's own
/// output (F32 on the host, the host's value rounded to BF16 on a GPU).
Case modulatedNormCase(const NormShape& s, bool centered, bool intoBF16) {
  Case c{.op = intoBF16 ? "modulatedNormInto" : "modulatedNorm",
         .name = s.name() + (centered ? " centered" : " rms") + (intoBF16 ? " y BF16" : "")};
  c.typical = s.typical && !centered;
  c.inputs = [s] {
    return Tensors{specialRows(Key{70, s.seed()}, s), host(randomFloats(Key{71, 0}, s.n), {s.n}),
                   modulations(Key{72, 0}, s), modulations(Key{73, 0}, s), rowMap(Key{74, s.seed()}, s.rows)};
  };
  c.run = [centered, intoBF16](const Tensors& in) {
    if (!intoBF16) return Tensors{netops::modulatedNorm(in[0], in[1], in[2], in[3], in[4], kEps, centered)};
    Tensor y = Tensor::empty(in[0].shape(), DType::BF16, in[0].device());
    netops::modulatedNormInto(in[0], in[1], in[2], in[3], in[4], kEps, centered, y);
    return Tensors{y};
  };
  c.reference = [centered, intoBF16](const Tensors& in) {
    std::vector<float> y(in[0].numel());
    ref::modulatedNorm(valuesOf(in[0]).data(), valuesOf(in[1]).data(), valuesOf(in[2]).data(),
                       valuesOf(in[3]).data(), valuesOf(in[4]).data(), kEps, centered, in[0].dim(0), in[0].dim(1),
                       y.data());
    Tensor out = host(y, in[0].shape());
    return Tensors{intoBF16 ? out.to(DType::BF16) : out};
  };
  c.outputNames = {"y"};
  if (!intoBF16) c.gpu = GpuCompare::HostRoundedToBF16;
  c.cut = {{{0, 1}, {4, 1}}, {{0, 1}}};
  return c;
}

/// gatedNormAddInto's inputs {x, y BF16, w, gate, map}; the output is x after the add.
Case gatedNormAddCase(const NormShape& s) {
  Case c{.op = "gatedNormAddInto", .name = s.name()};
  c.typical = s.typical;
  c.inputs = [s] {
    return Tensors{host(randomFloats(Key{80, s.seed()}, s.rows * s.n), {s.rows, s.n}),
                   specialRows(Key{81, s.seed()}, s).to(DType::BF16), host(randomFloats(Key{82, 0}, s.n), {s.n}),
                   modulations(Key{83, 0}, s), rowMap(Key{84, s.seed()}, s.rows)};
  };
  c.run = [](const Tensors& in) {
    Tensor x = in[0].clone();
    netops::gatedNormAddInto(x, in[1], in[2], in[3], in[4], kEps);
    return Tensors{x};
  };
  c.reference = [](const Tensors& in) {
    std::vector<float> x = valuesOf(in[0]);
    ref::gatedNormAdd(x.data(), valuesOf(in[1]).data(), valuesOf(in[2]).data(), valuesOf(in[3]).data(),
                      valuesOf(in[4]).data(), kEps, in[0].dim(0), in[0].dim(1));
    return Tensors{host(x, in[0].shape())};
  };
  c.outputNames = {"x"};
  c.cut = {{{0, 1}, {1, 1}, {4, 1}}, {{0, 1}}};
  return c;
}

struct PixelShape {
  std::int64_t frames, c, pixels;
  bool typical = false;
  std::uint32_t seed() const { return static_cast<std::uint32_t>((frames * 100 + c) * 10000 + pixels); }
};
const PixelShape kPixelShapes[] = {{1, 1, 1},    {2, 3, 5},    {1, 4, 16},   {2, 3, 17},    {1, 16, 33},
                                   {3, 5, 255},  {2, 64, 300}, {9, 2, 40},   {3, 7, 1100}, {4, 128, 1024, true},
                                   // The host's runs of 2048 pixels: a long and a short run a frame,
                                   // each thread's next run longer or shorter than its last.
                                   {3, 3, 2100},
                                   // Runs at their shortest where the L2 is 1 MiB (128 pixels of
                                   // 1000 channels): three a frame, 128, 128 and 44 pixels.
                                   {2, 1000, 300},
                                   // A GPU thread's second pass takes 8 channels at a time: one
                                   // batch and 5 left.
                                   {2, 13, 40},
                                   // A GPU's tiles of 32 pixels (GIZML_CUDA_ROW_BLOCKS=1): three a
                                   // frame, their values 8 threads a pixel, 37 channels (4 rounds of
                                   // 32 and 5 left).
                                   {3, 37, 96},
                                   // Tiles of 24 KiB (192 F32 channels): 48 KiB of dynamic shared
                                   // memory beside the tiles' static scales, as {3, 6144} above.
                                   {2, 192, 64}};

/// pixelNormInto of x (F32 or BF16, NaN / ±inf / -0 planted) into a new tensor, or with inPlace
/// into a copy of x itself (out = x, as the benchmarks and a VAE's decoder run it); a frame is an item.
Case pixelNormCase(const PixelShape& s, DType dtype, bool act, bool inPlace = false) {
  Case c{.op = "pixelNormInto",
         .name = dims({s.frames, s.c, s.pixels}) + " " + dtypeName(dtype) + (act ? " silu" : "") + (inPlace ? " in place" : "")};
  c.typical = s.typical && dtype == DType::BF16 && act && !inPlace;
  c.inputs = [s, dtype] {
    const std::int64_t count = s.frames * s.c * s.pixels;
    return Tensors{host(withSpecials(Key{120, s.seed()}, count), {s.frames, s.c, s.pixels}).to(dtype)};
  };
  c.run = [act, inPlace](const Tensors& in) {
    Tensor out = inPlace ? in[0].clone() : Tensor::empty(in[0].shape(), in[0].dtype(), in[0].device());
    netops::pixelNormInto(inPlace ? out : in[0], 1e-8, act, out);
    return Tensors{out};
  };
  c.reference = [act](const Tensors& in) {
    std::vector<float> y(in[0].numel());
    ref::pixelNorm(valuesOf(in[0]).data(), in[0].dim(0), in[0].dim(1), in[0].dim(2), 1e-8, act, y.data());
    return Tensors{host(y, in[0].shape()).to(in[0].dtype())};
  };
  c.outputNames = {"out"};
  c.cut = {{{0, 1}}, {{0, 1}}};
  return c;
}

struct GroupShape {
  Shape x;  // [c, ...]
  std::int64_t groups;
  bool typical = false;
  std::int64_t channelsPerGroup() const { return x[0] / groups; }
  std::string name() const { return "x " + shapeString(x) + " groups " + std::to_string(groups); }
};
// Groups of one value, L < 16 (empty slices), L = 16 k, odd L, rank 1 (S = 1), many groups,
// channels longer than a GPU's chunk of a channel (4096: two and three chunks, the last one short),
// and slices that a GPU streams through its ring of 6 (or 12) stages of 1024 values (norms/cuda.cu:
// slices of whole 16-byte chunks): one stage ([128, 32, 32]), 16 stages, round either ring, the
// last slice's last one short ([2, 262132] in 2 groups: slices of 16384, the last 16372; the first
// group finite, see below). The last two, with [128, 32, 32] and [2, 262132], are shapes that the one
// launch of GIZML_CUDA_GROUP_NORM_AHEAD takes (whole 16-byte pieces): 16 groups of 4 channels (its
// slices waiting for the chunks of an earlier group), and channels of 3 of its chunks, the last short.
const GroupShape kGroupShapes[] = {{{1}, 1},          {{2, 3}, 1},         {{4, 5}, 2},       {{6, 2, 3}, 3},
                                   {{16, 1}, 4},      {{32, 17}, 32},      {{8, 4, 4}, 4},    {{12}, 3},
                                   {{64, 9, 9}, 32},  {{32, 33, 17}, 8},   {{128, 32, 32}, 32, true},
                                   {{4, 5000}, 2},    {{2, 9000}, 2},      {{2, 262132}, 2},  {{64, 16, 16}, 16},
                                   {{8, 9280}, 4}};

/// groupNorm of x (NaN / ±inf / -0 planted in the last group only, so the other groups stay
/// finite); a group is an item (the run takes the groups from x's channels).
Case groupNormCase(const GroupShape& s, DType dtype, bool act, bool into = false) {
  Case c{.op = into ? "groupNormInto" : "groupNorm", .name = s.name() + " " + dtypeName(dtype) + (act ? " silu" : "")};
  c.typical = s.typical && dtype == DType::BF16 && act;
  c.inputs = [s] {
    const std::int64_t count = Tensor::empty(s.x).numel(), c = s.x[0], groupLength = count / s.groups;
    auto x = randomFloats(Key{140, static_cast<std::uint32_t>(count)}, count, 2.0f, 0.25f);
    const auto specials = withSpecials(Key{141, 0}, groupLength);
    std::copy(specials.begin(), specials.end(), x.end() - groupLength);
    return Tensors{host(x, s.x), host(randomFloats(Key{142, 0}, c), {c}), host(randomFloats(Key{143, 0}, c), {c})};
  };
  const std::int64_t perGroup = s.channelsPerGroup();
  c.run = [perGroup, dtype, act, into](const Tensors& in) {
    const std::int64_t groups = in[0].dim(0) / perGroup;
    if (!into) return Tensors{netops::groupNorm(in[0], groups, in[1], in[2], 1e-5, act, dtype)};
    Tensors out{Tensor::empty(in[0].shape(), dtype, in[0].device())};
    netops::groupNormInto(in[0], groups, in[1], in[2], 1e-5, act, out[0]);
    return out;
  };
  c.reference = [perGroup, dtype, act](const Tensors& in) {
    const std::int64_t ch = in[0].dim(0);
    std::vector<float> y(in[0].numel());
    ref::groupNorm(valuesOf(in[0]).data(), ch, in[0].numel() / ch, ch / perGroup, netops::GROUP_SLICES,
                   valuesOf(in[1]).data(), valuesOf(in[2]).data(), 1e-5, act, y.data());
    return Tensors{host(y, in[0].shape()).to(dtype)};
  };
  c.outputNames = {"y"};
  c.cut = {{{0, perGroup}, {1, perGroup}, {2, perGroup}}, {{0, perGroup}}};
  return c;
}

struct RopeShape {
  std::int64_t rows, width, head, stride;
  bool typical = false;
  std::uint32_t seed() const { return static_cast<std::uint32_t>(rows * 100000 + width * 10 + head); }
  std::string name() const {
    return "rows " + std::to_string(rows) + " width " + std::to_string(width) + " head " + std::to_string(head) +
           " stride " + std::to_string(stride);
  }
};
// Heads of 2 and of odd halves (3, 17), halves of 16 and 64, a stride past the width (those values
// must stay), more rows than a GPU block, q of a qkv row (stride 3 width), and a stride that puts
// every other row 4 bytes off 8 (a GPU's quads, RowPlan::quads, take only the rows on 8 bytes).
const RopeShape kRopeShapes[] = {{1, 2, 2, 2},        {3, 8, 4, 8},      {2, 24, 6, 30},   {4, 64, 64, 64},
                                 {5, 96, 32, 100},    {3, 34, 34, 40},   {37, 256, 128, 256}, {300, 16, 16, 16},
                                 {64, 1536, 128, 4608, true}, {5, 32, 16, 34}};

/// rowNormRopeInto on a copy of rows [rows, stride] BF16 (NaN / ±inf / -0 planted), with w, cos, sin.
Case rowNormRopeCase(const RopeShape& s) {
  Case c{.op = "rowNormRopeInto", .name = s.name()};
  c.typical = s.typical;
  c.inputs = [s] {
    const std::int64_t pairs = s.rows * (s.width / 2);
    return Tensors{host(withSpecials(Key{160, s.seed()}, s.rows * s.stride), {s.rows, s.stride}).to(DType::BF16),
                   host(randomFloats(Key{161, 0}, s.width), {s.width}),
                   host(randomFloats(Key{162, s.seed()}, pairs, 0.7f), {s.rows, s.width / 2}),
                   host(randomFloats(Key{163, s.seed()}, pairs, 0.7f), {s.rows, s.width / 2})};
  };
  c.run = [s](const Tensors& in) {
    Tensor v = in[0].clone();
    netops::rowNormRopeInto(Gpu{v.device(), nullptr}, v.data<std::uint16_t>(), s.stride, v.dim(0), s.width, s.head,
                            in[1].data<float>(), 1e-6, in[2].data<float>(), in[3].data<float>());
    return Tensors{v};
  };
  c.reference = [s](const Tensors& in) {
    std::vector<float> v = valuesOf(in[0]);
    ref::rowNormRope(v.data(), s.stride, in[0].dim(0), s.width, s.head, valuesOf(in[1]).data(), 1e-6,
                     valuesOf(in[2]).data(), valuesOf(in[3]).data());
    return Tensors{host(v, in[0].shape()).to(DType::BF16)};
  };
  c.outputNames = {"rows"};
  c.cut = {{{0, 1}, {2, 1}, {3, 1}}, {{0, 1}}};
  return c;
}

}  // namespace

std::vector<Case> normsCases() {
  std::vector<Case> cases;
  for (bool centered : {false, true})
    for (const NormShape& s : kShapes) cases.push_back(modulatedNormCase(s, centered, false));
  for (const NormShape& s : {kShapes[2], kShapes[4], kShapes[7], kShapes[9], kShapes[11]}) {
    cases.push_back(modulatedNormCase(s, false, true));
    cases.push_back(modulatedNormCase(s, true, true));
  }
  for (const NormShape& s : kShapes) cases.push_back(gatedNormAddCase(s));
  for (const PixelShape& s : kPixelShapes)
    for (DType dtype : {DType::F32, DType::BF16})
      for (bool act : {false, true}) cases.push_back(pixelNormCase(s, dtype, act));
  // In place (each form must load what it stores over first): few channels, a GPU thread's batches
  // of 8 channels, a GPU's tiles of 32 pixels (GIZML_CUDA_ROW_BLOCKS=1), the host's runs of 2048.
  for (const PixelShape& s : {kPixelShapes[7], kPixelShapes[9], kPixelShapes[10], kPixelShapes[12], kPixelShapes[13],
                              kPixelShapes[14]})
    for (DType dtype : {DType::F32, DType::BF16}) cases.push_back(pixelNormCase(s, dtype, dtype == DType::BF16, true));
  for (const GroupShape& s : kGroupShapes) {
    cases.push_back(groupNormCase(s, DType::F32, false));
    cases.push_back(groupNormCase(s, DType::BF16, true));
  }
  for (const GroupShape& s : {kGroupShapes[2], kGroupShapes[8], kGroupShapes[10]}) {
    cases.push_back(groupNormCase(s, DType::F32, false, true));
    cases.push_back(groupNormCase(s, DType::BF16, true, true));
  }
  for (const RopeShape& s : kRopeShapes) cases.push_back(rowNormRopeCase(s));
  return cases;
}

}  // namespace gizml::registry

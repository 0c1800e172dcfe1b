// gizml.netops: every op under its C++ (seed) name, with the C++ argument names. Adding an op is
// one m.def line (plus, for a new result struct, one result(...) line).
//
// The raw-address entry points (a language model's step, rowNormRopeInto, sampleCandidates) take
// addresses as int, as the seed's u64 (a tensor's data_ptr(): gizml's or torch's), unchecked, as
// in C++: the memory must hold what the op reads and writes.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <utility>

#include "bindings.hpp"

namespace gizml::python {
namespace {

using namespace nb::literals;
using Address = std::uintptr_t;

template <class T>
T* at(Address a) {
  return reinterpret_cast<T*>(a);
}

/// A result struct: its fields read-only, and iterable in field order, so that
/// `y, mean, rstd = gizml.netops.layerNorm(...)` unpacks it as C++'s structured bindings do.
template <class R, class... F>
void result(nb::module_& m, const char* name, std::pair<const char*, F R::*>... fields) {
  nb::class_<R> c(m, name);
  (c.def_ro(fields.first, fields.second), ...);
  c.def("__iter__", [fields...](const R& r) { return nb::iter(nb::make_tuple(r.*(fields.second)...)); });
  c.def("__len__", [](const R&) { return sizeof...(F); });
}
template <class R, class F>
std::pair<const char*, F R::*> field(const char* name, F R::*member) {
  return {name, member};
}

}  // namespace

void bindNetops(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("netops", "gizml::netops: the operations of networks (SPEC §3)");
  namespace n = gizml::netops;
  using n::LayerNormResult, n::LayerNormGradResult, n::RmsNormResult, n::Int8RowsResult, n::Sampled;

  result(m, "LayerNormResult", field("y", &LayerNormResult::y), field("mean", &LayerNormResult::mean),
         field("rstd", &LayerNormResult::rstd));
  result(m, "LayerNormGradResult", field("dx", &LayerNormGradResult::dx),
         field("dweight", &LayerNormGradResult::dweight), field("dbias", &LayerNormGradResult::dbias));
  result(m, "RmsNormResult", field("y", &RmsNormResult::y), field("rstd", &RmsNormResult::rstd));
  result(m, "Int8RowsResult", field("q", &Int8RowsResult::q), field("s", &Int8RowsResult::s));
  result(m, "Sampled", field("token", &Sampled::token), field("mayBeCut", &Sampled::mayBeCut));

  // rows.hpp: norms, losses, argmax, dropout
  m.def("layerNorm", &n::layerNorm, "x"_a, "weight"_a, "bias"_a, "eps"_a);
  m.def("layerNormGrad", &n::layerNormGrad, "dy"_a, "x"_a, "weight"_a, "mean"_a, "rstd"_a);
  m.def("rmsNorm", &n::rmsNorm, "x"_a, "weight"_a, "eps"_a);
  m.def("crossEntropyLoss", &n::crossEntropyLoss, "logits"_a, "labels"_a);
  m.def("crossEntropyRows", &n::crossEntropyRows, "logits"_a, "labels"_a);
  m.def("crossEntropyGrad", &n::crossEntropyGrad, "logits"_a, "labels"_a, "scale"_a);
  m.def("argmax", &n::argmax, "x"_a);
  m.def("dropout", &n::dropout, "x"_a, "key"_a, "p"_a);

  // gemm.hpp (lazyMatmul, lazyConv and lazyConv3 are gizml.lazyMatmul, ...)
  m.def("affine", &n::affine, "x"_a, "w"_a, "b"_a, "compute"_a = DType::F32);
  m.def("patchRows", &n::patchRows, "x"_a, "kh"_a, "kw"_a, "pad"_a, "r0"_a, "r1"_a, "dtype"_a = DType::F32);

  // conv.hpp, pool.hpp, attention.hpp's causalMask
  m.def("im2col", &n::im2col, "x"_a, "kh"_a, "kw"_a, "stride"_a, "pad"_a);
  m.def("col2im", &n::col2im, "cols"_a, "n"_a, "c"_a, "h"_a, "w"_a, "kh"_a, "kw"_a, "stride"_a, "pad"_a);
  m.def("im2col1d", &n::im2col1d, "x"_a, "k"_a, "stride"_a, "pad"_a, "dilation"_a, "first"_a = 0, "count"_a = -1);
  m.def("col2im1d", &n::col2im1d, "cols"_a, "c"_a, "length"_a, "k"_a, "stride"_a, "pad"_a);
  m.def("conv1d", &n::conv1d, "x"_a, "w"_a, "bias"_a, "stride"_a, "pad"_a, "dilation"_a);
  m.def("convTranspose1d", &n::convTranspose1d, "x"_a, "w"_a, "bias"_a, "stride"_a, "pad"_a);
  m.def("pool2d", &n::pool2d, "x"_a, "size"_a, "stride"_a, "average"_a);
  m.def("pool2dGrad", &n::pool2dGrad, "dy"_a, "x"_a, "size"_a, "stride"_a, "average"_a);
  m.def("causalMask", &n::causalMask, "tq"_a, "tk"_a);

  // attention.hpp: exact attention, a transformer's packed rows, cross and 3-D neighborhood attention
  nb::class_<n::HeadPrep>(m, "HeadPrep",
                          "A transformer's QK norm and rotary: qw, kw [head] F32; cos, sin [rows, half] F32 (both "
                          "undefined: no rotation); eps.")
      .def(nb::init<>())
      .def("__init__",
           [](n::HeadPrep* p, const Tensor& qw, const Tensor& kw, const Tensor& cos, const Tensor& sin, double eps) {
             new (p) n::HeadPrep{qw, kw, cos, sin, eps};
           },
           "qw"_a, "kw"_a, "cos"_a = Tensor(), "sin"_a = Tensor(), "eps"_a = 1e-6)
      .def_rw("qw", &n::HeadPrep::qw)
      .def_rw("kw", &n::HeadPrep::kw)
      .def_rw("cos", &n::HeadPrep::cos)
      .def_rw("sin", &n::HeadPrep::sin)
      .def_rw("eps", &n::HeadPrep::eps);
  m.def("attention", &n::attention, "q"_a, "k"_a, "v"_a, "scale"_a, "causal"_a = false, "rate"_a = 0.0,
        "key"_a = Key{});
  m.def("headPrepInPlace", &n::headPrepInPlace, "qkv"_a, "n"_a, "heads"_a, "head"_a, "p"_a, "row0"_a = 0);
  m.def("attendedRows", &n::attendedRows, "qkv"_a, "heads"_a, "head"_a, "quantized"_a = false, "group"_a = 0,
        "prep"_a = std::vector<n::HeadPrep>{}, "queries"_a = 0);
  m.def("attentionRows", &n::attentionRows, "qkv"_a, "heads"_a, "head"_a, "quantized"_a, "group"_a, "out"_a,
        "prep"_a = std::vector<n::HeadPrep>{}, "queries"_a = 0);
  m.def("crossAttentionRows", &n::crossAttentionRows, "q"_a, "kv"_a, "heads"_a, "head"_a, "out"_a);
  m.def("neighborhood3d", &n::neighborhood3d, "qkv"_a, "grid"_a, "kernel"_a, "heads"_a, "scale"_a);

  // norms.hpp: the diffusion norms
  m.def("modulatedNorm", &n::modulatedNorm, "x"_a, "w"_a, "shift"_a, "scale"_a, "map"_a, "eps"_a,
        "centered"_a = false);
  m.def("modulatedNormInto", &n::modulatedNormInto, "x"_a, "w"_a, "shift"_a, "scale"_a, "map"_a, "eps"_a,
        "centered"_a, "y"_a);
  m.def("gatedNormAddInto", &n::gatedNormAddInto, "x"_a, "y"_a, "w"_a, "gate"_a, "map"_a, "eps"_a);
  m.def("pixelNorm", &n::pixelNorm, "x"_a, "eps"_a, "act"_a = false);
  m.def("pixelNormInto", &n::pixelNormInto, "x"_a, "eps"_a, "act"_a, "out"_a);
  m.def("groupNorm", &n::groupNorm, "x"_a, "groups"_a, "w"_a, "b"_a, "eps"_a, "act"_a, "dtype"_a = DType::F32);
  m.def("groupNormInto", &n::groupNormInto, "x"_a, "groups"_a, "w"_a, "b"_a, "eps"_a, "act"_a, "out"_a);
  m.def("rowNormRopeInto",
        [](const Gpu& g, Address atRows, std::int64_t stride, std::int64_t rows, std::int64_t width,
           std::int64_t head, Address w, double eps, Address cos, Address sin) {
          n::rowNormRopeInto(g, at<std::uint16_t>(atRows), stride, rows, width, head, at<const float>(w), eps,
                             at<const float>(cos), at<const float>(sin));
        },
        "gpu"_a, "at"_a, "stride"_a, "rows"_a, "width"_a, "head"_a, "w"_a, "eps"_a, "cos"_a, "sin"_a);

  // quant.hpp: the 8-bit rows
  m.def("hadamardRows", &n::hadamardRows, "x"_a);
  m.def("hadamardRowsInto", &n::hadamardRowsInto, "x"_a, "y"_a);
  m.def("rotateWeightRows", &n::rotateWeightRows, "w"_a);
  m.def("int8Rows", &n::int8Rows, "x"_a, "bits"_a = 8);
  m.def("int8RowsInto", &n::int8RowsInto, "x"_a, "q"_a, "s"_a, "bits"_a = 8);
  m.def("modulatedInt8Rows", &n::modulatedInt8Rows, "x"_a, "w"_a, "shift"_a, "scale"_a, "map"_a, "eps"_a,
        "centered"_a = false, "bits"_a = 8);
  m.def("modulatedInt8RowsInto", &n::modulatedInt8RowsInto, "x"_a, "w"_a, "shift"_a, "scale"_a, "map"_a, "eps"_a,
        "y"_a, "q"_a, "s"_a, "centered"_a = false, "bits"_a = 8);
  m.def("int8RowsProduct", &n::int8RowsProduct, "qa"_a, "sa"_a, "qb"_a, "sb"_a, "bias"_a = Tensor());
  m.def("int8RowsProductInto", &n::int8RowsProductInto, "qa"_a, "sa"_a, "qb"_a, "sb"_a, "out"_a, "bias"_a = Tensor());

  // step.hpp: a language model's step, on raw addresses
  m.attr("TOP_EACH") = n::TOP_EACH;
  m.attr("CANDIDATE_ROW") = n::CANDIDATE_ROW;
  m.attr("CANDIDATE_WORKERS") = n::CANDIDATE_WORKERS;
  m.attr("GROUP_SLICES") = n::GROUP_SLICES;
  m.def("argmaxInto",
        [](const Gpu& g, std::int64_t rows, std::int64_t vocab, std::int64_t stride, bool indirect, Address top,
           Address logits, Address blocks) {
          n::argmaxInto(g, rows, vocab, stride, indirect, at<float>(top), at<const float>(logits),
                        at<const float* const>(blocks));
        },
        "g"_a, "rows"_a, "vocab"_a, "stride"_a, "indirect"_a, "top"_a, "logits"_a, "blocks"_a = 0);
  m.def("candidatesInto",
        [](const Gpu& g, std::int64_t rows, std::int64_t vocab, std::int64_t stride, bool indirect, Address cand,
           Address logits, Address blocks) {
          n::candidatesInto(g, rows, vocab, stride, indirect, at<float>(cand), at<const float>(logits),
                            at<const float* const>(blocks));
        },
        "g"_a, "rows"_a, "vocab"_a, "stride"_a, "indirect"_a, "cand"_a, "logits"_a, "blocks"_a = 0);
  m.def("splitSumInto",
        [](const Gpu& g, Address y, Address p, std::int64_t total, std::int64_t splits, bool add) {
          n::splitSumInto(g, at<float>(y), at<const float>(p), total, splits, add);
        },
        "g"_a, "y"_a, "p"_a, "total"_a, "splits"_a, "add"_a);
  m.def("normRotateInto",
        [](const Gpu& g, std::int64_t rows, std::int64_t width, double eps, bool rotate, std::int64_t stride,
           std::int64_t offset, Address y, Address x, Address w, Address d, Address map, std::int64_t xRows) {
          n::normRotateInto(g, rows, width, eps, rotate, stride, offset, at<float>(y), at<const float>(x),
                            at<const float>(w), at<const float>(d), at<const float>(map), xRows);
        },
        "g"_a, "rows"_a, "width"_a, "eps"_a, "rotate"_a, "stride"_a, "offset"_a, "y"_a, "x"_a, "w"_a, "d"_a,
        "map"_a = 0, "xRows"_a = 0);
  m.def("siluMulRotatedInto",
        [](const Gpu& g, std::int64_t rows, std::int64_t ffn, std::int64_t nUp, Address y, Address p, Address d) {
          n::siluMulRotatedInto(g, rows, ffn, nUp, at<float>(y), at<const float>(p), at<const float>(d));
        },
        "g"_a, "rows"_a, "ffn"_a, "nUp"_a, "y"_a, "p"_a, "d"_a = 0);
  m.def("sampleCandidates",
        [](Address cand, double temperature, std::int64_t topK, double topP, Key key) {
          return n::sampleCandidates(at<const float>(cand), temperature, topK, topP, key);
        },
        "cand"_a, "temperature"_a, "topK"_a, "topP"_a, "key"_a);
}

}  // namespace gizml::python

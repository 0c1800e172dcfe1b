// The row ops (SPEC §3 "Affine and norms", "Losses and argmax"): their per-element formulas and
// their row functions, written once on the shared row type (exact/row16.hpp) for the host (16
// float lanes) and CUDA (a half-warp), and each op's kernel struct (core/dispatch.hpp): its
// argument struct, its host path (host.cpp) and its launcher (cuda.cu).
#pragma once

#include <cstdint>

#include "exact/hd.hpp"
#include "exact/math.hpp"
#include "exact/row16.hpp"
#include "gizml/gpu.hpp"

namespace gizml::netops::rows {

// ---- per-element formulas ----------------------------------------------------------------------

/// layerNorm's output element: fma((x - mean) * rstd, weight, bias).
template <class F>
GIZML_HD F layerNormValue(F x, float mean, float rstd, F weight, F bias) {
  return exact::fmaLane((x - mean) * rstd, weight, bias);
}

/// layerNormGrad's xhat = (x - mean) * rstd.
template <class F>
GIZML_HD F layerNormXhat(F x, float mean, float rstd) {
  return (x - mean) * rstd;
}

/// layerNormGrad's dx = rstd * fma(-xhat, c, g - a).
template <class F>
GIZML_HD F layerNormGradDx(F g, F xhat, float a, float c, float rstd) {
  return exact::fmaLane(-xhat, exact::broadcast<F>(c), g - a) * rstd;
}

/// rmsNorm's output element: (x * scale) * weight.
template <class F>
GIZML_HD F rmsNormValue(F x, float scale, F weight) {
  return (x * scale) * weight;
}

/// crossEntropyGrad's element: (e * inv - onehot) * scale, e = exp(x - m), inv = F32(1 / s).
template <class F>
GIZML_HD F crossEntropyGradValue(F e, float inv, F onehot, float scale) {
  return (e * inv - onehot) * scale;
}

/// dropout's element: x * factor where the uniform draw u >= p, else +0.
template <class F>
GIZML_HD F dropoutValue(F x, F u, float p, float factor) {
  return exact::select(u >= p, x * factor, F{});
}

// ---- the ops' kernels ----------------------------------------------------------------------------------

struct LayerNorm {
  static constexpr const char* kName = "gizml::netops::layerNorm";
  static constexpr bool kValuesInQuads = true;  // its values walk takes quads where its plan asks
  struct Args {
    const float *x, *w, *b;
    float eps;
    std::int64_t rows, n;
    float *y, *mean, *rstd;
  };
  /// Row r: its statistics (statsOf, which also writes mean[r] and rstd[r]), then its values a
  /// step at a time (values; exact::statsThenValues). A GPU's block a row (core/cuda_row_blocks.cuh)
  /// runs the same two with x's row copied to shared memory (stagedRow, handed to statsOf).
  struct RowAt {
    const float* x;
    float* y;
    exact::MeanRstd s;
  };
  using Staged = float;
  GIZML_HD static const float* stagedRow(const Args& a, std::int64_t r) { return a.x + r * a.n; }
  GIZML_HD static std::int64_t valueSteps(const Args& a) { return a.n; }  // one an element
  template <class Row>
  GIZML_HD static RowAt statsOf(const Row& row, const Args& a, std::int64_t r, const float* x) {
    const exact::MeanRstd s = exact::layerNormStats(row, x, a.eps);
    if (row.leader()) {
      a.mean[r] = s.mean;
      a.rstd[r] = s.rstd;
    }
    return {x, a.y + r * a.n, s};
  }
  template <class At>
  GIZML_HD static void values(const At& at, const Args& a, const RowAt& v) {
    at.stream(v.y, layerNormValue(at.load(v.x), v.s.mean, v.s.rstd, at.load(a.w), at.load(a.b)));
  }
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    exact::statsThenValues<LayerNorm>(row, a, r);
  }
  /// Its host loop's work a value (exact::hostWork): a row norm's, the unit.
  static std::int64_t costAValue(const Args&) { return 1; }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// dx by rows; dweight and dbias by columns, each column's chain over the rows in order.
struct LayerNormGrad {
  static constexpr const char* kName = "gizml::netops::layerNormGrad";
  struct Args {
    const float *dy, *x, *w, *mean, *rstd;
    std::int64_t rows, n;
    float *dx, *dweight, *dbias;
  };
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    const float *dy = a.dy + r * a.n, *x = a.x + r * a.n;
    const float mu = a.mean[r], rs = a.rstd[r], nf = static_cast<float>(a.n);
    float sums[2];  // sum16(g), dot16(g, xhat), in one pass
    row.reduce(sums, [&](const auto& at, auto& acc) {
      const auto g = at.load(dy) * at.load(a.w);
      acc[0] = acc[0] + g;
      acc[1] = exact::fmaLane(g, layerNormXhat(at.load(x), mu, rs), acc[1]);
    });
    const float ga = sums[0] / nf, c = sums[1] / nf;
    float* dx = a.dx + r * a.n;
    row.forEach([&](const auto& at) {
      at.store(dx, layerNormGradDx(at.load(dy) * at.load(a.w), layerNormXhat(at.load(x), mu, rs), ga, c, rs));
    });
  }
  /// One step of column j's chains over the rows: dweight's fma(dy, xhat, acc), dbias's + dy.
  template <class F>
  GIZML_HD static void columnStep(F dy, F xhat, F& accW, F& accB) {
    accW = exact::fmaLane(dy, xhat, accW);
    accB = accB + dy;
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// rmsNorm: scale = rsqrt(dot16(x, x) / n + eps); y = (x * scale) * weight.
struct RmsNorm {
  static constexpr const char* kName = "gizml::netops::rmsNorm";
  static constexpr bool kValuesInQuads = true;  // its values walk takes quads where its plan asks
  struct Args {
    const float *x, *w;
    float eps;
    std::int64_t rows, n;
    float *y, *rstd;
  };
  /// Row r: its scale (statsOf, which also writes rstd[r]), then its values a step at a time; a
  /// GPU's block a row stages x's row as LayerNorm's.
  struct RowAt {
    const float* x;
    float* y;
    float scale;
  };
  using Staged = float;
  GIZML_HD static const float* stagedRow(const Args& a, std::int64_t r) { return a.x + r * a.n; }
  GIZML_HD static std::int64_t valueSteps(const Args& a) { return a.n; }
  template <class Row>
  GIZML_HD static RowAt statsOf(const Row& row, const Args& a, std::int64_t r, const float* x) {
    const float scale = exact::rmsScale(row, x, a.eps);
    if (row.leader()) a.rstd[r] = scale;
    return {x, a.y + r * a.n, scale};
  }
  template <class At>
  GIZML_HD static void values(const At& at, const Args& a, const RowAt& v) {
    at.stream(v.y, rmsNormValue(at.load(v.x), v.scale, at.load(a.w)));
  }
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    exact::statsThenValues<RmsNorm>(row, a, r);
  }
  /// Its host loop's work a value (exact::hostWork): a row norm's, the unit.
  static std::int64_t costAValue(const Args&) { return 1; }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// Per row: m = the value at the row's argmax, s = sum16(exp(x - m)); the loss
/// (m + log(s)) - x[label] and/or the gradient (exp(x - m) * F32(1 / s) - onehot) * scale.
struct CrossEntropy {
  static constexpr const char* kName = "gizml::netops::crossEntropy";
  struct Args {
    const float* logits;
    const std::int64_t* labels;  // checked on the host before the launch
    std::int64_t rows, n;
    float* losses;  // or null
    float* grad;    // or null
    float scale;
  };
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    const float* x = a.logits + r * a.n;
    float* e = a.grad ? a.grad + r * a.n : nullptr;  // holds exp(x - m) between the two passes
    const float m = row.maxValue(x);
    const float s = row.sum16([&](const auto& at) {
      const auto v = exact::expLanes(at.load(x) - m);
      if (e) at.store(e, v);
      return v;
    });
    const std::int64_t label = a.labels[r];
    if (a.losses && row.leader()) a.losses[r] = (m + exact::log(s)) - x[label];
    if (e) {
      const float inv = 1.0f / s;
      row.forEach([&](const auto& at) { at.store(e, crossEntropyGradValue(at.load(e), inv, at.oneHot(label), a.scale)); });
    }
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

struct Argmax {
  static constexpr const char* kName = "gizml::netops::argmax";
  struct Args {
    const float* x;
    std::int64_t rows, n;
    std::int64_t* out;
  };
  template <class Row>
  GIZML_HD static void row(const Row& row, const Args& a, std::int64_t r) {
    const std::int64_t at = row.argmax(a.x + r * a.n);
    if (row.leader()) a.out[r] = at;
  }
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

/// Element-wise, not a row op: element i takes word i of the key's draw.
struct Dropout {
  static constexpr const char* kName = "gizml::netops::dropout";
  struct Args {
    const float* x;
    std::int64_t count;
    std::uint32_t k0, k1;
    float p, factor;
    float* y;
  };
  static void host(const Args& a);
  static void cuda(const Gpu& g, const Args& a);
};

}  // namespace gizml::netops::rows

// The shape lists of the convolution and pooling cases: the registry's cases and the tests that
// check other properties over the same edges (adjoint identities, accuracy, the GPU's formulas)
// read them from here.
#pragma once

#include <cstdint>
#include <string>

namespace gizml::registry {

/// "[a, b, c]".
std::string dims(std::initializer_list<std::int64_t> extents);

/// im2col / col2im: x [n, c, h, w], a kh x kw kernel, one stride and one pad for both axes.
struct Shape2d {
  std::int64_t n, c, h, w, kh, kw, stride, pad;
  bool typical = false;
  std::int64_t oh() const { return (h + 2 * pad - kh) / stride + 1; }
  std::int64_t ow() const { return (w + 2 * pad - kw) / stride + 1; }
  std::int64_t rows() const { return n * oh() * ow(); }
  std::int64_t width() const { return c * kh * kw; }
  std::string name() const {
    return "x " + dims({n, c, h, w}) + " k " + std::to_string(kh) + "x" + std::to_string(kw) + " stride " +
           std::to_string(stride) + " pad " + std::to_string(pad);
  }
};
inline const Shape2d kShapes2d[] = {
    {1, 1, 1, 1, 1, 1, 1, 0},    // one pixel
    {2, 3, 5, 7, 3, 3, 1, 1},    // the usual 3x3, pad 1
    {1, 2, 6, 5, 2, 3, 2, 0},    // stride 2, a non-square kernel
    {2, 1, 9, 8, 2, 2, 3, 0},    // stride > kernel: pixels no window sees
    {1, 2, 4, 5, 3, 3, 1, 2},    // pad 2: windows wholly in the padding
    {1, 3, 3, 4, 5, 6, 1, 1},    // kernel = the padded image: one window
    {3, 2, 17, 16, 4, 3, 2, 1},  // odd sizes
    {1, 17, 6, 6, 3, 3, 3, 2},   // many channels, stride 3 pad 2
    {4, 3, 9, 7, 3, 2, 2, 1},    // a batch of four
    {2, 8, 20, 20, 3, 3, 1, 1, true},
};

/// im2col1d / col2im1d / conv1d: x [t, c], a kernel of k taps.
struct Shape1d {
  std::int64_t t, c, k, stride, pad, dilation;
  std::int64_t ot() const { return (t + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
  std::string name() const {
    return "x " + dims({t, c}) + " k " + std::to_string(k) + " stride " + std::to_string(stride) + " pad " +
           std::to_string(pad) + " dilation " + std::to_string(dilation);
  }
};
inline const Shape1d kShapes1d[] = {
    {1, 1, 1, 1, 0, 1},   {9, 3, 3, 1, 0, 1}, {11, 4, 3, 2, 1, 1}, {10, 3, 3, 1, 2, 2}, {16, 2, 2, 2, 1, 3},
    {13, 5, 2, 3, 0, 1},  // stride > k
    {4, 3, 6, 1, 1, 1},   // k = t + 2 pad: one row
    {5, 2, 3, 1, 2, 2},   // dilated kernel = the padded input
    {33, 7, 5, 2, 2, 3},  {40, 17, 4, 1, 1, 1},
};

/// conv1d: a 1-d shape, o output channels, with or without a bias.
struct Conv1dShape {
  Shape1d g;
  std::int64_t o;
  bool bias;
  bool typical = false;
};
inline const Conv1dShape kConv1dShapes[] = {
    {{1, 1, 1, 1, 0, 1}, 1, false},   {{9, 3, 3, 1, 0, 1}, 4, true},   {{11, 4, 3, 2, 1, 1}, 16, true},
    {{10, 3, 3, 1, 2, 2}, 17, false}, {{16, 2, 2, 2, 1, 3}, 33, true}, {{13, 5, 2, 3, 0, 1}, 15, true},
    {{4, 3, 6, 1, 1, 1}, 2, true},    {{5, 2, 3, 1, 2, 2}, 31, false}, {{40, 17, 4, 1, 1, 1}, 48, true},
    {{512, 64, 5, 1, 2, 1}, 96, true, true},
    // c k = 1250 taps: several of the host GEMM's k blocks, a block starting inside a channel
    {{60, 250, 5, 2, 3, 2}, 40, true},
};

/// convTranspose1d: x [n, c], w [c, o, k].
struct TransposeShape {
  std::int64_t n, c, o, k, stride, pad;
  bool bias, typical = false;
  std::int64_t length() const { return (n - 1) * stride - 2 * pad + k; }
  std::string name() const {
    return "x " + dims({n, c}) + " o " + std::to_string(o) + " k " + std::to_string(k) + " stride " +
           std::to_string(stride) + " pad " + std::to_string(pad) + (bias ? " bias" : "");
  }
};
inline const TransposeShape kTransposeShapes[] = {
    {1, 1, 1, 1, 1, 0, false}, {5, 3, 4, 3, 1, 0, true},  {6, 3, 16, 4, 2, 1, true}, {5, 4, 17, 5, 3, 2, false},
    {4, 2, 33, 2, 3, 0, true}, {1, 3, 2, 3, 2, 1, true},  {9, 20, 7, 3, 1, 1, true}, {3, 2, 5, 7, 2, 3, true},
    {128, 64, 48, 4, 2, 1, true, true},
};

/// pool2d / pool2dGrad: x [n, c, h, w], size x size windows, no padding.
struct PoolShape {
  std::int64_t n, c, h, w, size, stride;
  bool typical = false;
  std::int64_t oh() const { return (h - size) / stride + 1; }
  std::int64_t ow() const { return (w - size) / stride + 1; }
  std::int64_t count() const { return n * c * h * w; }
  std::int64_t outCount() const { return n * c * oh() * ow(); }
  std::string name() const {
    return "x " + dims({n, c, h, w}) + " size " + std::to_string(size) + " stride " + std::to_string(stride);
  }
};
inline const PoolShape kPoolShapes[] = {
    {1, 1, 1, 1, 1, 1},    // one pixel
    {2, 3, 6, 8, 2, 2},    // the usual 2x2 / 2
    {1, 2, 7, 7, 3, 1},    // overlapping windows
    {2, 2, 9, 10, 2, 3},   // stride > size: pixels no window holds
    {1, 3, 9, 8, 3, 2},    // odd overlap
    {2, 1, 5, 5, 5, 1},    // the window is the image
    {1, 2, 17, 33, 4, 4},  // odd sizes, a remainder left out
    {3, 5, 16, 16, 2, 1},
    {5, 3, 11, 9, 3, 2},   // a batch of five
    {2, 3, 37, 41, 2, 2},  // 2x2 / 2 (the host's own path): an odd last row and column, 20 windows a row
    {3, 2, 28, 28, 2, 2},  // 2x2 / 2 as in a small CNN: 14 windows a row
    {4, 16, 64, 64, 3, 2, true},
};

}  // namespace gizml::registry

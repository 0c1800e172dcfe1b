// Values the C++ API computes, for the Python tests to match bit for bit (test_netops.py,
// test_matches_cpp): one line an output, "<name> <hex of its bytes>", on inputs drawn from Keys
// (Tensor::normal), which Python draws the same way. Run by the CTest test python_package.
#include <cstdio>
#include <string>
#include <vector>

#include "gizml/gizml.hpp"

using namespace gizml;

namespace {

void print(const std::string& name, const Tensor& t) {
  Tensor h = t.to(Device::host());
  const auto* b = static_cast<const unsigned char*>(h.raw());
  std::printf("%s ", name.c_str());
  for (std::size_t i = 0; i < h.bytes(); ++i) std::printf("%02x", b[i]);
  std::printf("\n");
}

Tensor normal(std::uint32_t k, const Shape& s) { return Tensor::normal(Key{k, 7}, s); }

}  // namespace

int main() {
  Tensor x = normal(1, {5, 37}), w = normal(2, {37}), b = normal(3, {37});
  auto ln = netops::layerNorm(x, w, b, 1e-5);
  print("layerNorm.y", ln.y);
  print("layerNorm.mean", ln.mean);
  print("layerNorm.rstd", ln.rstd);
  auto g = netops::layerNormGrad(normal(4, {5, 37}), x, w, ln.mean, ln.rstd);
  print("layerNormGrad.dx", g.dx);
  print("layerNormGrad.dweight", g.dweight);
  print("layerNormGrad.dbias", g.dbias);
  auto rms = netops::rmsNorm(x, w, 1e-6);
  print("rmsNorm.y", rms.y);
  print("rmsNorm.rstd", rms.rstd);
  const std::vector<std::int64_t> labels = {0, 36, 5, 17, 2};
  print("crossEntropyRows", netops::crossEntropyRows(x, labels));
  print("crossEntropyGrad", netops::crossEntropyGrad(x, labels, 0.2));
  print("dropout", x.dropout(Key{9, 1}, 0.25));

  Tensor a = normal(5, {9, 33}), wm = normal(6, {7, 33}), bm = normal(7, {7}), r = normal(8, {9, 7});
  print("affine", netops::affine(a, wm, bm));
  print("lazyMatmul.chain", lazyMatmul(a, wm).bias(bm).scale(0.5).gelu().residual(r).silu().relu().store());
  print("lazyMatmul.bf16", lazyMatmul(a, wm).bias(bm).dtype(DType::BF16).store());

  Tensor img = normal(9, {2, 3, 8, 9}), kern = normal(10, {4, 3 * 3 * 3}), kb = normal(11, {4});
  print("lazyConv", lazyConv(kern, img.rows(1, 2).reshape({3, 8, 9}), 3, 3, 1).bias(kb).silu().store());
  Tensor cols = netops::im2col(img, 3, 3, 2, 1);
  print("im2col", cols);
  print("col2im", netops::col2im(cols, 2, 3, 8, 9, 3, 3, 2, 1));
  print("pool2d.max", netops::pool2d(img, 2, 2, false));
  print("pool2d.avg", netops::pool2d(img, 3, 2, true));
  print("pool2dGrad.max", netops::pool2dGrad(normal(12, {2, 3, 4, 4}), img, 2, 2, false));
  print("conv1d", netops::conv1d(normal(13, {11, 3}), normal(14, {4, 3, 3}), {normal(15, {4})}, 2, 1, 1));
  print("groupNorm", netops::groupNorm(normal(16, {6, 5, 4}), 3, normal(17, {6}), normal(18, {6}), 1e-5, true,
                                       DType::F32));
  Tensor rowsH = normal(19, {3, 512});
  print("hadamardRows", netops::hadamardRows(rowsH));
  auto q = netops::int8Rows(rowsH, 8);
  print("int8Rows.q", q.q);
  print("int8Rows.s", q.s);
  print("int8RowsProduct", netops::int8RowsProduct(q.q, q.s, q.q, q.s));
  print("int8RowsProduct.bias", netops::int8RowsProduct(q.q, q.s, q.q, q.s, normal(50, {3})));
  // The attention family: exact attention (causal, dropout), packed rows with a HeadPrep, groups
  // and queries, cross attention, a 3-D neighborhood.
  print("attention", netops::attention(normal(20, {2, 5, 8}), normal(21, {2, 7, 8}), normal(22, {2, 7, 6}), 0.35,
                                       true, 0.25, Key{23, 1}));
  Tensor qkv = normal(24, {12, 3 * 2 * 8});
  // cos and sin: any values do (the rotation's formula does not need them on a circle).
  netops::HeadPrep prep{normal(26, {8}), normal(27, {8}), normal(25, {12, 2}), normal(31, {12, 2}), 1e-6};
  print("attendedRows", netops::attendedRows(qkv, 2, 8, false, 6, {prep}, 9));
  Tensor cross = Tensor::empty({5, 16});
  netops::crossAttentionRows(normal(28, {5, 16}), normal(29, {7, 32}), 2, 8, cross);
  print("crossAttentionRows", cross);
  print("neighborhood3d", netops::neighborhood3d(normal(30, {2 * 3 * 4, 3 * 2 * 8}), {2, 3, 4}, {3, 3, 3}, 2, 0.3));
  return 0;
}

// The consumer's program: one layerNorm on the host, checked against its value worked by hand.
#include <cmath>
#include <cstdio>
#include <vector>

#include <gizml/gizml.hpp>

int main() {
  using gizml::Tensor;
  Tensor x = Tensor::fromVector(std::vector<float>{1, 2, 3, 4}, {1, 4});
  Tensor w = Tensor::fromVector(std::vector<float>(4, 1.0f), {4});
  Tensor b = Tensor::zeros({4});
  auto [y, mean, rstd] = gizml::netops::layerNorm(x, w, b, 0.0);
  // mean 2.5, variance 1.25: y[0] = -1.5 / sqrt(1.25).
  const float got = y.toVector<float>()[0];
  const double want = -1.5 / std::sqrt(1.25);
  std::printf("consumer: layerNorm([1 2 3 4])[0] = %.7f (want %.7f), built with CUDA: %s\n", got, want,
              gizml::builtWithCuda() ? "yes" : "no");
  return std::fabs(got - want) < 1e-6 ? 0 : 1;
}

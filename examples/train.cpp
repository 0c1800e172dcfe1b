// gizml-train: trains a small CNN on Fashion-MNIST with gizml's exact ops alone — forward,
// backward and AdamW — and prints the SHA-256 of the trained weights, which is the same on any
// thread count, SIMD width and device (every op is exact and batch-invariant, and the data order,
// the initial weights and the dropout masks come from Philox keys).
//
//   conv 3x3 (1 -> 32) + bias + ReLU -> max pool 2 -> conv 3x3 (32 -> 64) + bias + ReLU -> max pool 2
//   -> affine (64*7*7 -> 128) + ReLU -> dropout 0.25 -> affine (128 -> 10) -> cross entropy (mean)
//
// AdamW (gizml::netops::adamW), its learning rate falling linearly from --lr to 0 over the run.
// Reads the gzip'd IDX files (Debian's dataset-fashion-mnist), shows a progress bar on a terminal
// (a line an epoch otherwise), prints the loss and the test accuracy per epoch, writes a PNG plot
// of both against steps and the weights as safetensors (PyTorch's names and shapes:
// conv1.weight [32, 1, 3, 3], ..., fc2.bias [10]).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "gizml/gizml.hpp"
#include "train_io.hpp"

using namespace gizml;
namespace io = train_io;

namespace {

constexpr std::int64_t kSide = 28, kClasses = 10;
constexpr std::int64_t kC1 = 32, kC2 = 64, kHidden = 128, kFlat = kC2 * 7 * 7;
constexpr double kDropout = 0.25;

struct Options {
  std::int64_t epochs = 3, batch = 128, steps = 0;  // steps > 0: stop after that many steps
  std::int64_t testLimit = 0;                       // > 0: evaluate on the first that many test images
  std::uint32_t seed = 1;
  int threads = 0;
  bool gpu = false, check = false, requireGpu = false;
  double lr = 2e-3, weightDecay = 1e-2;
  std::string data = "/usr/share/datasets/fashion-mnist", out = "train-out", hashFile;
};

struct Dataset {
  std::vector<float> images;  // [count, 28 * 28], normalised
  std::vector<std::int64_t> labels;
  std::int64_t count = 0;
};

Dataset load(const std::string& dir, const std::string& prefix) {
  const io::Idx images = io::readIdxGz(dir + "/" + prefix + "-images-idx3-ubyte.gz", 3);
  const io::Idx labels = io::readIdxGz(dir + "/" + prefix + "-labels-idx1-ubyte.gz", 1);
  if (images.dims[1] != kSide || images.dims[2] != kSide)
    throw std::runtime_error(dir + "/" + prefix + "-images: expected 28 x 28 images");
  if (images.dims[0] != labels.dims[0])
    throw std::runtime_error(dir + "/" + prefix + ": " + std::to_string(images.dims[0]) + " images but " +
                             std::to_string(labels.dims[0]) + " labels");
  // Each byte's value once, in F32: (p / 255 - 0.2860) / 0.3530 (Fashion-MNIST's mean and spread).
  float table[256];
  for (int p = 0; p < 256; ++p) table[p] = (static_cast<float>(p) / 255.0f - 0.2860f) / 0.3530f;
  Dataset d;
  d.count = images.dims[0];
  d.images.resize(images.data.size());
  for (std::size_t i = 0; i < images.data.size(); ++i) d.images[i] = table[images.data[i]];
  for (std::uint8_t l : labels.data) {
    if (l >= kClasses) throw std::runtime_error(dir + "/" + prefix + "-labels: a label " + std::to_string(l) + " >= 10");
    d.labels.push_back(l);
  }
  return d;
}

// ---- the model ---------------------------------------------------------------------------------

struct Param {
  std::string name;
  Shape torchShape;  // as PyTorch's module holds it
  Tensor value, m, v;
};

struct Model {
  std::vector<Param> params;  // conv1.weight, conv1.bias, conv2.weight, conv2.bias, fc1.*, fc2.*
  Tensor& operator[](int i) { return params[i].value; }
};

/// PyTorch's default initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases,
/// each parameter from its own Philox key; computed on the host, then copied to the device.
Model init(std::uint32_t seed, Device device) {
  struct Spec {
    const char* name;
    Shape shape, torchShape;
    std::int64_t fanIn;
  };
  const Spec specs[] = {{"conv1.weight", {kC1, 9}, {kC1, 1, 3, 3}, 9},
                        {"conv1.bias", {kC1}, {kC1}, 9},
                        {"conv2.weight", {kC2, kC1 * 9}, {kC2, kC1, 3, 3}, kC1 * 9},
                        {"conv2.bias", {kC2}, {kC2}, kC1 * 9},
                        {"fc1.weight", {kHidden, kFlat}, {kHidden, kFlat}, kFlat},
                        {"fc1.bias", {kHidden}, {kHidden}, kFlat},
                        {"fc2.weight", {kClasses, kHidden}, {kClasses, kHidden}, kHidden},
                        {"fc2.bias", {kClasses}, {kClasses}, kHidden}};
  Model model;
  const Key base{seed, 0x696e6974u};  // "init"
  for (std::uint32_t i = 0; i < 8; ++i) {
    const Spec& s = specs[i];
    const Key key = base.split(i);
    const float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.fanIn)));
    std::vector<float> v(static_cast<std::size_t>(Tensor::empty(s.shape).numel()));
    for (std::size_t j = 0; j < v.size(); ++j) v[j] = (key.uniform(j) * 2.0f - 1.0f) * bound;
    model.params.push_back({s.name, s.torchShape, Tensor::fromVector(v, s.shape).to(device),
                            Tensor::zeros(s.shape, DType::F32, device), Tensor::zeros(s.shape, DType::F32, device)});
  }
  return model;
}

/// The activations one step keeps for its backward pass.
struct Forward {
  Tensor x, a1, p1, a2, flat, h, d, logits;
};

Forward forward(Model& w, const Tensor& x, std::int64_t n, const Key* dropoutKey) {
  Forward f;
  f.x = x;
  f.a1 = lazyConvBatch(w[0], x, 3, 3, 1, 1).bias(w[1]).relu().store().reshape({n, kC1, kSide, kSide});
  f.p1 = netops::pool2d(f.a1, 2, 2, false);
  f.a2 = lazyConvBatch(w[2], f.p1, 3, 3, 1, 1).bias(w[3]).relu().store().reshape({n, kC2, 14, 14});
  f.flat = netops::pool2d(f.a2, 2, 2, false).reshape({n, kFlat});
  f.h = lazyMatmul(f.flat, w[4]).bias(w[5]).relu().store();
  f.d = dropoutKey ? f.h.dropout(*dropoutKey, kDropout) : f.h;
  f.logits = netops::affine(f.d, w[6], w[7]);
  return f;
}

/// The gradients of the mean loss, in the parameters' order.
std::vector<Tensor> backward(Model& w, const Forward& f, const std::vector<std::int64_t>& labels, const Key& dropoutKey) {
  const std::int64_t n = static_cast<std::int64_t>(labels.size());
  std::vector<Tensor> g(8);
  const Tensor dlogits = netops::crossEntropyGrad(f.logits, labels, 1.0 / static_cast<double>(n));
  g[6] = lazyMatmulTN(dlogits, f.d).store();
  g[7] = netops::sumRows(dlogits);
  const Tensor dd = lazyMatmulNN(dlogits, w[6]).store();
  const Tensor dh = netops::reluGrad(dd.dropout(dropoutKey, kDropout), f.h);  // the same mask and factor
  g[4] = lazyMatmulTN(dh, f.flat).store();
  g[5] = netops::sumRows(dh);
  const Tensor dflat = lazyMatmulNN(dh, w[4]).store();
  const Tensor dz2 = netops::reluGrad(netops::pool2dGrad(dflat.reshape({n, kC2, 7, 7}), f.a2, 2, 2, false), f.a2);
  g[2] = netops::convWeightGrad(dz2, f.p1, 3, 3, 1, 1);
  g[3] = netops::sumChannels(dz2);
  const Tensor dp1 = netops::convInputGrad(dz2, w[2], 14, 14, 3, 3, 1, 1);
  const Tensor dz1 = netops::reluGrad(netops::pool2dGrad(dp1, f.a1, 2, 2, false), f.a1);
  g[0] = netops::convWeightGrad(dz1, f.x, 3, 3, 1, 1);
  g[1] = netops::sumChannels(dz1);
  return g;
}

// ---- a run ---------------------------------------------------------------------------------------

struct Point {
  std::int64_t step;
  double value;
};
struct Result {
  std::vector<std::uint8_t> weights;  // safetensors
  std::string sha256;
  std::vector<Point> losses, accuracies;  // per step; per evaluation (percent)
  double seconds = 0;
};

Tensor batchImages(const Dataset& d, const std::vector<std::int64_t>& order, std::int64_t first, std::int64_t n,
                   Device device, std::vector<std::int64_t>& labels) {
  std::vector<float> buf(static_cast<std::size_t>(n * kSide * kSide));
  labels.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t at = order.empty() ? first + i : order[first + i];
    std::copy_n(d.images.begin() + at * kSide * kSide, kSide * kSide, buf.begin() + i * kSide * kSide);
    labels[i] = d.labels[at];
  }
  return Tensor::fromVector(buf, {n, 1, kSide, kSide}).to(device);
}

double testAccuracy(Model& model, const Dataset& test, Device device) {
  std::int64_t right = 0;
  std::vector<std::int64_t> labels;
  for (std::int64_t first = 0; first < test.count; first += 500) {
    const std::int64_t n = std::min<std::int64_t>(500, test.count - first);
    const Tensor x = batchImages(test, {}, first, n, device, labels);
    const std::vector<std::int64_t> best = forward(model, x, n, nullptr).logits.argmax();
    for (std::int64_t i = 0; i < n; ++i) right += best[i] == labels[i];
  }
  return 100.0 * static_cast<double>(right) / static_cast<double>(test.count);
}

std::string clock(double s) {
  const long t = std::lround(s);
  char b[32];
  std::snprintf(b, sizeof b, "%ld:%02ld", t / 60, t % 60);
  return b;
}

Result train(const Options& o, const Dataset& trainSet, const Dataset& test, Device device, bool quiet) {
  Result r;
  Model model = init(o.seed, device);
  const std::int64_t perEpoch = (trainSet.count + o.batch - 1) / o.batch;
  const std::int64_t total = o.steps > 0 ? std::min(o.steps, perEpoch * o.epochs) : perEpoch * o.epochs;
  const std::int64_t epochs = (total + perEpoch - 1) / perEpoch;
  const bool tty = !quiet && isatty(STDOUT_FILENO);
  netops::AdamWConfig adam{o.lr, 0.9, 0.999, 1e-8, o.weightDecay};
  const Key dropoutBase{o.seed, 0x64726f70u}, shuffleBase{o.seed, 0x73687566u};  // "drop", "shuf"
  const auto start = std::chrono::steady_clock::now();
  auto since = [](auto t0) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::int64_t step = 0;
  std::vector<std::int64_t> labels;
  for (std::int64_t epoch = 0; epoch < epochs; ++epoch) {
    // This epoch's order: Fisher-Yates from the shuffle key's words.
    std::vector<std::int64_t> order(static_cast<std::size_t>(trainSet.count));
    for (std::int64_t i = 0; i < trainSet.count; ++i) order[i] = i;
    const Key shuffle = shuffleBase.split(static_cast<std::uint32_t>(epoch));
    for (std::int64_t i = trainSet.count - 1; i > 0; --i)
      std::swap(order[i], order[shuffle.word(static_cast<std::uint64_t>(i)) % static_cast<std::uint64_t>(i + 1)]);
    const auto epochStart = std::chrono::steady_clock::now();
    const std::int64_t steps = std::min(perEpoch, total - step);
    double lossSum = 0;
    double lastDraw = -1;
    for (std::int64_t s = 0; s < steps; ++s, ++step) {
      const std::int64_t first = s * o.batch, n = std::min(o.batch, trainSet.count - first);
      const Tensor x = batchImages(trainSet, order, first, n, device, labels);
      const Key dropKey = dropoutBase.split(static_cast<std::uint32_t>(step));
      const Forward f = forward(model, x, n, &dropKey);
      const double loss = netops::crossEntropyLoss(f.logits, labels);
      const std::vector<Tensor> g = backward(model, f, labels, dropKey);
      // The learning rate falls linearly to lr / total at the last step (f64, + - * / only: the
      // same on every machine).
      adam.lr = o.lr * (static_cast<double>(total - step) / static_cast<double>(total));
      for (int i = 0; i < 8; ++i) {
        Param& p = model.params[i];
        netops::adamW(p.value, g[i], p.m, p.v, adam, step + 1);
      }
      lossSum += loss;
      r.losses.push_back({step + 1, loss});
      const double t = since(epochStart);
      if (tty && (t - lastDraw >= 0.2 || s + 1 == steps)) {
        lastDraw = t;
        const double rate = static_cast<double>((s + 1) * o.batch) / std::max(t, 1e-9);
        const int filled = static_cast<int>(30 * (s + 1) / steps);
        std::printf("\r  epoch %lld/%lld [%s%s] %lld/%lld  %6.0f img/s  ETA %s  loss %.4f ", static_cast<long long>(epoch + 1),
                    static_cast<long long>(epochs), std::string(filled, '#').c_str(), std::string(30 - filled, '.').c_str(),
                    static_cast<long long>(s + 1), static_cast<long long>(steps), rate,
                    clock(t / static_cast<double>(s + 1) * static_cast<double>(steps - s - 1)).c_str(), lossSum / (s + 1));
        std::fflush(stdout);
      }
    }
    const double epochSeconds = since(epochStart);
    const double acc = testAccuracy(model, test, device);
    r.accuracies.push_back({step, acc});
    if (!quiet)
      std::printf("%sepoch %lld: %lld steps, train loss %.4f, test accuracy %.2f %%, %.1f s (%.0f images/s)\n",
                  tty ? "\r\033[K" : "", static_cast<long long>(epoch + 1), static_cast<long long>(steps),
                  lossSum / static_cast<double>(steps), acc, epochSeconds,
                  static_cast<double>(std::min(steps * o.batch, trainSet.count)) / epochSeconds);
    std::fflush(stdout);
  }
  r.seconds = since(start);
  std::vector<io::NamedTensor> named;
  for (const Param& p : model.params) named.push_back({p.name, p.torchShape, p.value.toVector<float>()});
  r.weights = io::safetensorsBytes(named);
  r.sha256 = io::sha256Hex(r.weights);
  return r;
}

// ---- the plot --------------------------------------------------------------------------------------

void plot(const Result& r, const std::string& path, const std::string& title) {
  const int W = 900, H = 520, left = 70, right = 70, top = 50, bottom = 60;
  io::Canvas c(W, H);
  const std::array<std::uint8_t, 3> black{0, 0, 0}, grey{220, 220, 220}, blue{40, 90, 200}, light{170, 190, 235},
      red{200, 40, 40};
  const int pw = W - left - right, ph = H - top - bottom;
  const double maxStep = r.losses.empty() ? 1.0 : static_cast<double>(r.losses.back().step);
  double maxLoss = 0;
  for (const Point& p : r.losses) maxLoss = std::max(maxLoss, p.value);
  maxLoss = std::max(0.5, std::ceil(std::min(maxLoss, 3.0) * 2) / 2);
  auto X = [&](double s) { return left + static_cast<int>(std::lround(s / maxStep * pw)); };
  auto YL = [&](double l) { return top + ph - static_cast<int>(std::lround(std::min(l, maxLoss) / maxLoss * ph)); };
  auto YA = [&](double a) { return top + ph - static_cast<int>(std::lround((std::max(a, 50.0) - 50.0) / 50.0 * ph)); };
  for (int i = 0; i <= 5; ++i) {  // grid, loss ticks (left) and accuracy ticks (right)
    const int y = top + ph - i * ph / 5;
    c.line(left, y, left + pw, y, grey);
    char b[16];
    std::snprintf(b, sizeof b, "%.2f", maxLoss * i / 5);
    c.text(left - 6 - 6 * static_cast<int>(std::string(b).size()), y - 3, b, blue);
    std::snprintf(b, sizeof b, "%d%%", 50 + 10 * i);
    c.text(left + pw + 6, y - 3, b, red);
  }
  for (int i = 0; i <= 4; ++i) {
    const double s = maxStep * i / 4;
    char b[16];
    std::snprintf(b, sizeof b, "%.0f", s);
    c.line(X(s), top + ph, X(s), top + ph + 4, black);
    c.text(X(s) - 3 * static_cast<int>(std::string(b).size()), top + ph + 10, b, black);
  }
  c.line(left, top, left, top + ph, black);
  c.line(left + pw, top, left + pw, top + ph, black);
  c.line(left, top + ph, left + pw, top + ph, black);
  // The loss of each step (light) and its mean over the last 50 steps (dark).
  for (std::size_t i = 1; i < r.losses.size(); ++i)
    c.line(X(r.losses[i - 1].step), YL(r.losses[i - 1].value), X(r.losses[i].step), YL(r.losses[i].value), light);
  double sum = 0;
  int prevX = -1, prevY = -1;
  for (std::size_t i = 0; i < r.losses.size(); ++i) {
    sum += r.losses[i].value;
    if (i >= 50) sum -= r.losses[i - 50].value;
    const double mean = sum / static_cast<double>(std::min<std::size_t>(i + 1, 50));
    const int x = X(r.losses[i].step), y = YL(mean);
    if (prevX >= 0) c.line(prevX, prevY, x, y, blue, 2);
    prevX = x, prevY = y;
  }
  for (std::size_t i = 0; i < r.accuracies.size(); ++i) {
    const Point& p = r.accuracies[i];
    if (i > 0) c.line(X(r.accuracies[i - 1].step), YA(r.accuracies[i - 1].value), X(p.step), YA(p.value), red, 2);
    c.dot(X(p.step), YA(p.value), red);
    char b[16];
    std::snprintf(b, sizeof b, "%.2f%%", p.value);
    c.text(X(p.step) - 40, YA(p.value) - 14, b, red);
  }
  c.text(left, 18, title, black, 2);
  c.text(left, H - 22, "STEPS", black);
  c.text(left + 60, H - 22, "- TRAIN LOSS: MEAN OF 50 STEPS", blue);
  c.text(left + 300, H - 22, "- TEST ACCURACY", red);
  io::writeFile(path, io::pngBytes(c));
}

int usage() {
  std::fprintf(stderr,
               "usage: gizml-train [--epochs E] [--batch B] [--seed S] [--threads T] [--device cpu|gpu] [--out DIR]\n"
               "                   [--steps N] [--test-limit N] [--lr LR] [--data DIR] [--check] [--require-gpu]\n"
               "                   [--hash-file F]\n"
               "  --steps N: stop after N steps (a short run); --test-limit N: test on the first N test images;\n"
               "  --check: train again with 1 thread (and on GPU 0 where there is one) and compare the weights'\n"
               "  SHA-256 (--require-gpu: fail without a GPU); --hash-file F: write the SHA-256 to F\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // OpenMP reads its wait policy when it loads, before main: set it and start again. A step is
  // some 60 short parallel regions; threads that sleep between them are woken each time, which in
  // a virtual machine took longer than many of the regions (measured on 2 vCPUs of an AMD EPYC: an
  // epoch in 35-42 s sleeping, 28-29 s spinning 20000 times before sleeping). Spinning costs where
  // another program wants the cores (one busy competitor: 21 s against 16 s for 150 steps), so
  // OMP_WAIT_POLICY=passive is the setting for a shared machine; an explicit OMP_WAIT_POLICY or
  // GOMP_SPINCOUNT is kept.
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT")) {
    setenv("OMP_WAIT_POLICY", "active", 1);
    setenv("GOMP_SPINCOUNT", "20000", 1);  // a bounded spin (libgomp), then sleep
    execv("/proc/self/exe", argv);  // on failure, go on as we are
  }
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gizml-train: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    auto number = [&](std::int64_t least) {
      const std::string v = value();
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end || n < least) {
        std::fprintf(stderr, "gizml-train: %s: expected an integer >= %lld, got '%s'\n", a.c_str(),
                     static_cast<long long>(least), v.c_str());
        std::exit(2);
      }
      return static_cast<std::int64_t>(n);
    };
    if (a == "--epochs") o.epochs = number(1);
    else if (a == "--batch") o.batch = number(1);
    else if (a == "--seed") o.seed = static_cast<std::uint32_t>(number(0));
    else if (a == "--threads") o.threads = static_cast<int>(number(0));
    else if (a == "--steps") o.steps = number(1);
    else if (a == "--test-limit") o.testLimit = number(1);
    else if (a == "--lr") o.lr = std::atof(value().c_str());
    else if (a == "--out") o.out = value();
    else if (a == "--data") o.data = value();
    else if (a == "--hash-file") o.hashFile = value();
    else if (a == "--check") o.check = true;
    else if (a == "--require-gpu") o.requireGpu = true;
    else if (a == "--device") {
      const std::string d = value();
      if (d != "cpu" && d != "gpu") {
        std::fprintf(stderr, "gizml-train: --device: expected cpu or gpu, got '%s'\n", d.c_str());
        return 2;
      }
      o.gpu = d == "gpu";
    } else return usage();
  }
  try {
    if (o.threads > 0) setThreads(o.threads);
    if ((o.gpu || o.requireGpu) && gpuCount() == 0) {
      std::fprintf(stderr, "gizml-train: no GPU: %s\n", noGpuReason().c_str());
      return 1;
    }
    const Device device = o.gpu ? Device::cuda(0) : Device::host();
    const Dataset trainSet = load(o.data, "train");
    Dataset test = load(o.data, "t10k");
    if (o.testLimit > 0 && o.testLimit < test.count) {
      test.count = o.testLimit;
      test.images.resize(static_cast<std::size_t>(test.count * kSide * kSide));
      test.labels.resize(static_cast<std::size_t>(test.count));
    }
    const std::string where =
        o.gpu ? "GPU 0" : "host, " + std::to_string(threads()) + (threads() == 1 ? " thread" : " threads");
    std::printf("gizml-train: Fashion-MNIST (%lld train, %lld test images), batch %lld, %s%lld epochs, AdamW lr %g (linear decay), "
                "seed %u, %s\n",
                static_cast<long long>(trainSet.count), static_cast<long long>(test.count),
                static_cast<long long>(o.batch), o.steps > 0 ? ("at most " + std::to_string(o.steps) + " steps in ").c_str() : "",
                static_cast<long long>(o.epochs), o.lr, o.seed, where.c_str());
    std::fflush(stdout);
    const Result r = train(o, trainSet, test, device, false);
    mkdir(o.out.c_str(), 0755);
    io::writeFile(o.out + "/weights.safetensors", r.weights);
    plot(r, o.out + "/training.png", "GIZML-TRAIN  FASHION-MNIST  SEED " + std::to_string(o.seed));
    std::printf("trained in %.1f s; weights %s/weights.safetensors, plot %s/training.png\n", r.seconds, o.out.c_str(),
                o.out.c_str());
    std::printf("weights sha256 (%s): %s\n", where.c_str(), r.sha256.c_str());
    if (!o.hashFile.empty()) io::writeFile(o.hashFile, std::vector<std::uint8_t>(r.sha256.begin(), r.sha256.end()));
    if (!o.check) return 0;
    bool same = true;
    auto compare = [&](const std::string& what, Device d) {
      const Result other = train(o, trainSet, test, d, true);
      const bool ok = other.sha256 == r.sha256;
      std::printf("weights sha256 (%s): %s  %s (%.1f s)\n", what.c_str(), other.sha256.c_str(),
                  ok ? "the same" : "DIFFERENT", other.seconds);
      same = same && ok;
    };
    const int saved = threads();
    for (int t : o.gpu ? std::vector<int>{2, 1} : std::vector<int>{saved == 1 ? 2 : 1}) {
      setThreads(t);
      compare("host, " + std::to_string(t) + (t == 1 ? " thread" : " threads"), Device::host());
    }
    setThreads(saved);
    if (!o.gpu && gpuCount() > 0) compare("GPU 0", Device::cuda(0));
    else if (!o.gpu) std::printf("no GPU to compare: %s\n", noGpuReason().c_str());
    std::printf("%s\n", same ? "train check: the same weights everywhere" : "train check: the weights DIFFER");
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gizml-train: %s\n", e.what());
    return 1;
  }
}

// gizml-denoise: a video diffusion model's denoising loop, and its decoder's last blocks, built from
// gizml's ops alone.
//
// A small diffusion transformer with random weights in the shape of a real one (Wan- and
// LTX-style: AdaLN modulated by the timestep and a class a video, QK norm over the whole row with
// 3D rotary positions, norms after the attention and the FFN, gated residual adds) takes two videos
// of 2 latent frames of 8 x 8 tokens each from noise through a few Euler steps of flow matching,
// then a VAE-style decoder turns each latent frame into an image. Every op is exact, so the result
// is the same, bit for bit, with any thread count, with the AVX2 or AVX-512 build, and on a GPU:
// the program prints an FNV-1a fingerprint of the latents, of the images and of the 8-bit rows an
// INT8 FFN reads and of that FFN's first product, and --check runs it all again with 1 thread (and
// on GPU 0 where there is one) and compares.
//
// Rows are tokens, in (video, frame, y, x) order; map[r] is row r's video, so every modulated op
// picks that video's shift, scale and gate rows. Per layer and step:
//   y    = modulatedNormInto(x, shift0, scale0)        AdaLN (centered), rounded to BF16
//   qkv  = lazyMatmul(y, Wqkv) in BF16                 [rows, 3 dim]
//   rowNormRopeInto(q), rowNormRopeInto(k)             RMS norm of the whole q (k) row, 3D rotary a head
//   o    = attention of each video's tokens, a head at a time (exact)
//   gatedNormAddInto(x, lazyMatmul(o, Wo), gate0)      x += gate * norm(attention's output)
//   y, q8, s8 = modulatedInt8RowsInto(x, shift1, scale1)   the FFN's input, BF16 and as INT8 rows
//   gatedNormAddInto(x, lazyMatmul(gelu(lazyMatmul(y, W1)), W2), gate1)
//   (and int8RowsProduct(q8, s8, int8Rows(W1)): the first product of the FFN in W8A8, for its bits)
// then latent += -(1 / steps) * lazyMatmul(modulatedNorm(x), Wout) (an Euler step from t = 1 to 0).
// The decoder, a latent frame at a time: [64 channels, 8 x 8] = lazyMatmul(Win, latent rows),
// groupNormInto (8 groups, SiLU), a 3 x 3 lazyConv, pixelNormInto (SiLU), a 3 x 3 lazyConv to RGB.
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gizml/gizml.hpp"

using namespace gizml;

namespace {

struct Config {
  std::int64_t videos = 2, frames = 2, side = 8;  // a video's latent: frames x side x side tokens
  std::int64_t channels = 16, dim = 256, heads = 4, head = 64, ffn = 1024, layers = 2, steps = 4;
  std::int64_t timeDim = 256;                      // the timestep's sinusoidal features
  std::int64_t vaeChannels = 64, vaeGroups = 8;
  double eps = 1e-6;
  std::int64_t tokensPerVideo() const { return frames * side * side; }
  std::int64_t rows() const { return videos * tokensPerVideo(); }
};

/// N(0, 1) values times `s`, made on the host from the key and copied to `device`: the same
/// weights on every device.
Tensor scaledNormal(Key key, const Shape& shape, double s, Device device) {
  std::vector<float> v = Tensor::normal(key, shape).toVector<float>();
  for (float& e : v) e = static_cast<float>(e * s);
  return Tensor::fromVector(v, shape).to(device);
}
/// 1 + 0.1 N(0, 1): a norm's weights, near one as a trained model's are.
Tensor nearOne(Key key, std::int64_t n, Device device) {
  std::vector<float> v = Tensor::normal(key, {n}).toVector<float>();
  for (float& e : v) e = 1.0f + 0.1f * e;
  return Tensor::fromVector(v, {n}).to(device);
}
double fanIn(std::int64_t n) { return 1.0 / std::sqrt(static_cast<double>(n)); }

struct Layer {
  Tensor wqkv, qNorm, kNorm, wo, attnPostNorm, w1, w2, ffnPostNorm;
  netops::Int8RowsResult w1Codes;  // int8Rows(w1): W1 rotated and quantized, for the W8A8 product
  std::array<Tensor, 6> wMod;  // the cond's linear maps to shift0, scale0, gate0, shift1, scale1, gate1
};

struct Model {
  Config c;
  Device device;
  Tensor wTime, classes, wPatch, wShiftOut, wScaleOut, wOut;  // the cond, the patch embedding, the last layer
  Tensor ones, map, cos, sin;                                  // cos, sin [rows, dim / 2]: 3D rotary
  Tensor vaeIn, vaeNormW, vaeNormB, vaeConv, vaeRgb;
  std::vector<Layer> layers;

  Model(const Config& cfg, Device d) : c(cfg), device(d) {
    wTime = scaledNormal(Key{1, 0}, {c.dim, c.timeDim}, fanIn(c.timeDim), d);
    classes = scaledNormal(Key{1, 1}, {c.videos, c.dim}, 1.0, d);
    wPatch = scaledNormal(Key{1, 2}, {c.dim, c.channels}, fanIn(c.channels), d);
    wShiftOut = scaledNormal(Key{1, 3}, {c.dim, c.dim}, 0.1 * fanIn(c.dim), d);
    wScaleOut = scaledNormal(Key{1, 4}, {c.dim, c.dim}, 0.1 * fanIn(c.dim), d);
    wOut = scaledNormal(Key{1, 5}, {c.channels, c.dim}, fanIn(c.dim), d);
    ones = Tensor::fromVector(std::vector<float>(static_cast<std::size_t>(c.dim), 1.0f), {c.dim}).to(d);
    std::vector<float> video(static_cast<std::size_t>(c.rows()));
    for (std::int64_t r = 0; r < c.rows(); ++r) video[r] = static_cast<float>(r / c.tokensPerVideo());
    map = Tensor::fromVector(video, {c.rows()}).to(d);
    rotary(d);
    for (std::int64_t l = 0; l < c.layers; ++l) {
      const auto k = [&](std::uint32_t i) { return Key{100 + static_cast<std::uint32_t>(l), i}; };
      Layer L;
      L.wqkv = scaledNormal(k(0), {3 * c.dim, c.dim}, fanIn(c.dim), d);
      L.qNorm = nearOne(k(4), c.dim, d);
      L.kNorm = nearOne(k(5), c.dim, d);
      L.wo = scaledNormal(k(1), {c.dim, c.dim}, fanIn(c.dim), d);
      L.attnPostNorm = nearOne(k(6), c.dim, d);
      L.w1 = scaledNormal(k(2), {c.ffn, c.dim}, fanIn(c.dim), d);
      L.w2 = scaledNormal(k(3), {c.dim, c.ffn}, fanIn(c.ffn), d);
      L.w1Codes = netops::int8Rows(L.w1);
      L.ffnPostNorm = nearOne(k(7), c.dim, d);
      for (std::uint32_t m = 0; m < 6; ++m) L.wMod[m] = scaledNormal(k(10 + m), {c.dim, c.dim}, 0.1 * fanIn(c.dim), d);
      layers.push_back(std::move(L));
    }
    vaeIn = scaledNormal(Key{2, 0}, {c.vaeChannels, c.channels}, fanIn(c.channels), d);
    vaeNormW = nearOne(Key{2, 3}, c.vaeChannels, d);
    vaeNormB = scaledNormal(Key{2, 4}, {c.vaeChannels}, 0.1, d);
    vaeConv = scaledNormal(Key{2, 1}, {c.vaeChannels, 9 * c.vaeChannels}, fanIn(9 * c.vaeChannels), d);
    vaeRgb = scaledNormal(Key{2, 2}, {3, 9 * c.vaeChannels}, fanIn(9 * c.vaeChannels), d);
  }

  /// Each head's 32 rotary pairs split among the token's frame (8), y (12) and x (12), as Wan
  /// splits them; pair e of an axis with n pairs turns by position / 10000^(e / n), in float64.
  void rotary(Device d) {
    const std::int64_t half = c.head / 2, pairs = c.dim / 2;
    const std::int64_t axisPairs[3] = {half / 4, 3 * half / 8, half - half / 4 - 3 * half / 8};
    std::vector<float> cs(static_cast<std::size_t>(c.rows() * pairs)), sn(cs.size());
    for (std::int64_t r = 0; r < c.rows(); ++r) {
      const std::int64_t token = r % c.tokensPerVideo();
      const std::int64_t position[3] = {token / (c.side * c.side), token / c.side % c.side, token % c.side};
      for (std::int64_t j = 0; j < pairs; ++j) {
        std::int64_t e = j % half, axis = 0;
        while (e >= axisPairs[axis]) e -= axisPairs[axis++];
        const double angle = position[axis] / std::pow(10000.0, static_cast<double>(e) / axisPairs[axis]);
        cs[r * pairs + j] = static_cast<float>(std::cos(angle));
        sn[r * pairs + j] = static_cast<float>(std::sin(angle));
      }
    }
    cos = Tensor::fromVector(cs, {c.rows(), pairs}).to(d);
    sin = Tensor::fromVector(sn, {c.rows(), pairs}).to(d);
  }
};

/// 64-bit FNV-1a, fed a tensor's values as F32 bits (an I8 / I4 code is its integer as F32), and
/// their root mean square (in float64: a glance at the scale, the same wherever the bits are).
struct Fingerprint {
  std::uint64_t h = 1469598103934665603ull;
  double squares = 0;
  std::int64_t count = 0;
  double rms() const { return count ? std::sqrt(squares / static_cast<double>(count)) : 0.0; }
  void add(const Tensor& t) {
    for (float v : t.toFloats()) {
      squares += static_cast<double>(v) * v;
      ++count;
      std::uint32_t bits;
      std::memcpy(&bits, &v, 4);
      for (int b = 0; b < 4; ++b) {
        h ^= (bits >> (8 * b)) & 0xffu;
        h *= 1099511628211ull;
      }
    }
  }
};

/// The conditioning of each video at time t: silu(features(t) Wtimeᵀ) + its class row, [videos, dim].
/// features(t): the usual sinusoids of 1000 t, in float64, then F32.
Tensor conditioning(const Model& m, double t) {
  const Config& c = m.c;
  const std::int64_t half = c.timeDim / 2;
  std::vector<float> f(static_cast<std::size_t>(c.videos * c.timeDim));
  for (std::int64_t v = 0; v < c.videos; ++v)
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle = 1000.0 * t * std::exp(-std::log(10000.0) * static_cast<double>(i) / half);
      f[v * c.timeDim + i] = static_cast<float>(std::cos(angle));
      f[v * c.timeDim + half + i] = static_cast<float>(std::sin(angle));
    }
  const Tensor features = Tensor::fromVector(f, {c.videos, c.timeDim}).to(m.device);
  return lazyMatmul(features, m.wTime).silu().residual(m.classes).store();
}

/// Copies head `h` of rows [r0, r0 + n) of `rows` (rows of `width` values, the heads' part of each
/// starting at column `part`) into `to` [n, head], or back from `to` when `back`. (No op permutes
/// [rows, heads head] to [heads, rows, head]: a copy a row's head.)
void headRows(const Tensor& rows, std::int64_t width, std::int64_t part, std::int64_t h, std::int64_t head,
              std::int64_t r0, std::int64_t n, const Tensor& to, bool back) {
  const Tensor flat = rows.reshape({rows.numel() / head, head});
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t at = ((r0 + i) * width + part) / head + h;
    Tensor one = flat.rows(at, at + 1), mine = to.rows(i, i + 1);
    if (back) one.copyFrom(mine);
    else mine.copyFrom(one);
  }
}

/// One Euler step of every video from time t to t - 1 / steps: latent [rows, channels] becomes
/// latent - (1 / steps) v, v the transformer's velocity. The FFN's 8-bit input rows, and their
/// product with W1's, go into `codes`.
Tensor denoiseStep(const Model& m, const Gpu& g, const Tensor& latent, double t, Fingerprint& codes) {
  const Config& c = m.c;
  const std::int64_t rows = c.rows(), tokens = c.tokensPerVideo(), dim = c.dim;
  const Device d = m.device;
  // The cond's maps to each layer's shift, scale and gate rows, [videos, dim] each.
  const Tensor cond = conditioning(m, t);
  const auto modulation = [&](const Tensor& w) { return lazyMatmul(cond, w).store(); };

  Tensor x = lazyMatmul(latent, m.wPatch).store();  // [rows, dim], the residual stream (F32)
  Tensor y = Tensor::empty({rows, dim}, DType::BF16, d);
  Tensor o = Tensor::empty({rows, dim}, DType::F32, d);
  Tensor q1 = Tensor::empty({tokens, c.head}, DType::F32, d), k1 = q1.clone(), v1 = q1.clone();
  // The FFN's input as 8-bit rows: F32 integers on the host, I8 on a GPU (the same values).
  Tensor q8 = Tensor::empty({rows, dim}, d.isHost() ? DType::F32 : DType::I8, d);
  Tensor s8 = Tensor::empty({rows, 1}, DType::F32, d);
  for (const Layer& L : m.layers) {
    Tensor mod[6];
    for (int i = 0; i < 6; ++i) mod[i] = modulation(L.wMod[i]);
    // Attention: AdaLN, the product to q, k and v in BF16, QK norm and rotary in place.
    netops::modulatedNormInto(x, m.ones, mod[0], mod[1], m.map, c.eps, true, y);
    const Tensor qkv = lazyMatmul(y.to(DType::F32), L.wqkv).dtype(DType::BF16).store();  // [rows, 3 dim]
    std::uint16_t* at = qkv.data<std::uint16_t>();
    netops::rowNormRopeInto(g, at, 3 * dim, rows, dim, c.head, L.qNorm.data<float>(), c.eps, m.cos.data<float>(),
                            m.sin.data<float>());
    netops::rowNormRopeInto(g, at + dim, 3 * dim, rows, dim, c.head, L.kNorm.data<float>(), c.eps,
                            m.cos.data<float>(), m.sin.data<float>());
    const Tensor qkvF = qkv.to(DType::F32);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head));
    for (std::int64_t video = 0; video < c.videos; ++video)
      for (std::int64_t h = 0; h < c.heads; ++h) {
        const std::int64_t r0 = video * tokens;
        headRows(qkvF, 3 * dim, 0, h, c.head, r0, tokens, q1, false);
        headRows(qkvF, 3 * dim, dim, h, c.head, r0, tokens, k1, false);
        headRows(qkvF, 3 * dim, 2 * dim, h, c.head, r0, tokens, v1, false);
        const Tensor a = netops::attention(q1.reshape({1, tokens, c.head}), k1.reshape({1, tokens, c.head}),
                                           v1.reshape({1, tokens, c.head}), scale);
        headRows(o, dim, 0, h, c.head, r0, tokens, a.reshape({tokens, c.head}), true);
      }
    netops::gatedNormAddInto(x, lazyMatmul(o, L.wo).dtype(DType::BF16).store(), L.attnPostNorm, mod[2], m.map, c.eps);
    // FFN: its input as BF16 rows and as 8-bit rows in one pass; the product here takes the BF16.
    netops::modulatedInt8RowsInto(x, m.ones, mod[3], mod[4], m.map, c.eps, y, q8, s8, true);
    codes.add(q8);
    codes.add(s8);
    codes.add(netops::int8RowsProduct(q8, s8, L.w1Codes.q, L.w1Codes.s));  // ≈ y W1ᵀ, exact in its own way
    const Tensor hidden = lazyMatmul(y.to(DType::F32), L.w1).gelu().store();
    netops::gatedNormAddInto(x, lazyMatmul(hidden, L.w2).dtype(DType::BF16).store(), L.ffnPostNorm, mod[5], m.map,
                             c.eps);
  }
  netops::modulatedNormInto(x, m.ones, modulation(m.wShiftOut), modulation(m.wScaleOut), m.map, c.eps, true, y);
  return lazyMatmul(y.to(DType::F32), m.wOut).scale(-1.0 / static_cast<double>(c.steps)).residual(latent).store();
}

/// The decoder's blocks on each latent frame: [3, side side] images, frames in order.
std::vector<Tensor> decodeFrames(const Model& m, const Tensor& latent) {
  const Config& c = m.c;
  const std::int64_t pixels = c.side * c.side, ch = c.vaeChannels;
  std::vector<Tensor> images;
  for (std::int64_t f = 0; f < c.videos * c.frames; ++f) {
    // [channels, pixels], channel first: Win times the frame's latent rows transposed.
    Tensor z = lazyMatmul(m.vaeIn, latent.rows(f * pixels, (f + 1) * pixels)).store().reshape({ch, c.side, c.side});
    netops::groupNormInto(z, c.vaeGroups, m.vaeNormW, m.vaeNormB, c.eps, true, z);  // in place, then SiLU
    const Tensor h = lazyConv(m.vaeConv, z, 3, 3, 1).store().reshape({1, ch, pixels});  // one frame of ch channels
    netops::pixelNormInto(h, 1e-8, true, h);                                             // in place, then SiLU
    images.push_back(lazyConv(m.vaeRgb, h.reshape({ch, c.side, c.side}), 3, 3, 1).store());
  }
  return images;
}

struct Run {
  Fingerprint latents, images, codes;
  double stepSeconds = 0, decodeSeconds = 0;
};

Run runAll(const Config& c, Device d) {
  const Gpu g = d.isHost() ? Gpu::host() : Gpu::open(d.index);
  const Model m(c, d);
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  Tensor latent = Tensor::normal(Key{9, 9}, {c.rows(), c.channels}, d);
  Fingerprint codes;
  for (std::int64_t s = 0; s < c.steps; ++s)
    latent = denoiseStep(m, g, latent, 1.0 - static_cast<double>(s) / c.steps, codes);
  const auto t1 = clock::now();
  Fingerprint latents, images;
  latents.add(latent);
  for (const Tensor& image : decodeFrames(m, latent)) images.add(image);
  const auto t2 = clock::now();
  return {latents, images, codes, std::chrono::duration<double>(t1 - t0).count() / c.steps,
          std::chrono::duration<double>(t2 - t1).count()};
}

void print(const char* what, const Run& r) {
  std::printf("%s: latents %016llx (rms %.4f), images %016llx (rms %.4f), 8-bit rows and products %016llx (rms %.2f);\n"
              "  %.1f ms a step, decoder %.1f ms\n",
              what, static_cast<unsigned long long>(r.latents.h), r.latents.rms(),
              static_cast<unsigned long long>(r.images.h), r.images.rms(), static_cast<unsigned long long>(r.codes.h),
              r.codes.rms(), 1e3 * r.stepSeconds, 1e3 * r.decodeSeconds);
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  bool check = false, gpu = false;
  // A GPU required (--require-gpu, or GIZML_REQUIRE_GPU=1 as for the tests): without one, fail at
  // once instead of comparing the host with itself and passing.
  const char* requireEnv = std::getenv("GIZML_REQUIRE_GPU");
  bool requireGpu = requireEnv && std::strcmp(requireEnv, "1") == 0;
  int threadCount = 0;
  std::string bitsFile;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::int64_t {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gizml-denoise: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atoll(argv[++i]);
    };
    if (a == "--check") check = true;
    else if (a == "--gpu") gpu = true;
    else if (a == "--require-gpu") requireGpu = true;
    else if (a == "--threads") threadCount = static_cast<int>(value());
    else if (a == "--layers") c.layers = value();
    else if (a == "--steps") c.steps = value();
    else if (a == "--bits-file" && i + 1 < argc) bitsFile = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: gizml-denoise [--threads N] [--layers L] [--steps S] [--gpu] [--check] [--require-gpu]\n"
                   "                     [--bits-file F]\n"
                   "  --check: also run with 1 thread (and on GPU 0 where there is one) and compare the bits\n"
                   "  --require-gpu (or GIZML_REQUIRE_GPU=1): fail when there is no GPU\n"
                   "  --bits-file: write the three fingerprints to F (to compare builds and machines)\n");
      return 2;
    }
  }
  if (c.layers < 1 || c.steps < 1) {
    std::fprintf(stderr, "gizml-denoise: --layers and --steps must be at least 1\n");
    return 2;
  }
  try {
    if (threadCount > 0) setThreads(threadCount);
    if ((gpu || requireGpu) && gpuCount() == 0) {
      std::fprintf(stderr, "gizml-denoise: FAILED: no GPU: %s\n", noGpuReason().c_str());
      return 1;
    }
    std::printf("gizml-denoise: %lld videos of %lld x %lld x %lld latent tokens, %lld layers of %lld heads of %lld, "
                "ffn %lld, %lld Euler steps\n",
                static_cast<long long>(c.videos), static_cast<long long>(c.frames), static_cast<long long>(c.side),
                static_cast<long long>(c.side), static_cast<long long>(c.layers), static_cast<long long>(c.heads),
                static_cast<long long>(c.head), static_cast<long long>(c.ffn), static_cast<long long>(c.steps));
    const Device d = gpu ? Device::cuda(0) : Device::host();
    const Run main = runAll(c, d);
    const std::string where = gpu ? "GPU 0" : "host, " + std::to_string(threads()) + " threads";
    print(where.c_str(), main);
    if (!bitsFile.empty()) {
      std::FILE* f = std::fopen(bitsFile.c_str(), "w");
      if (!f) {
        std::fprintf(stderr, "gizml-denoise: cannot write %s\n", bitsFile.c_str());
        return 1;
      }
      std::fprintf(f, "%016llx %016llx %016llx\n", static_cast<unsigned long long>(main.latents.h),
                   static_cast<unsigned long long>(main.images.h), static_cast<unsigned long long>(main.codes.h));
      std::fclose(f);
    }
    if (!check) return 0;
    bool same = true;
    const auto compare = [&](const char* what, const Run& other) {
      print(what, other);
      const bool ok = other.latents.h == main.latents.h && other.images.h == main.images.h &&
                      other.codes.h == main.codes.h;
      std::printf("  %s\n", ok ? "the same bits" : "DIFFERENT bits");
      same = same && ok;
    };
    const int saved = threads();
    setThreads(1);
    compare("host, 1 thread", runAll(c, Device::host()));
    setThreads(saved);
    if (!gpu && gpuCount() > 0) compare("GPU 0", runAll(c, Device::cuda(0)));
    else if (!gpu) std::printf("no GPU: %s\n", noGpuReason().c_str());
    return same ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "gizml-denoise: %s\n", e.what());
    return 1;
  }
}

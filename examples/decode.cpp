// gizml-decode: a language model's decode loop built from gizml's ops alone.
//
// A small causal transformer with random weights in the shape of a real one (Qwen3-style: RMSNorm,
// per-head RMS norm of q and k with rotary positions, SwiGLU, a tied vocabulary of 32000) runs a
// prefill of the prompt, then greedy decoding (argmaxInto) and sampled decoding (candidatesInto and
// sampleCandidates, a key a token). Every op is exact, so the token ids are the same with any
// thread count, with the AVX2 or AVX-512 build, and on a GPU: the program prints a SHA-256-free
// fingerprint of the ids (their FNV-1a hash) and tokens/s, and --check runs the whole thing again
// with 1 thread and compares.
//
// The ops a step runs, per layer, for `rows` new tokens at positions [pos, pos + rows):
//   h    = normRotateInto(x)                     RMSNorm of the residual stream (no rotation)
//   qkv  = lazyMatmul(h, Wqkv)                   [rows, 3 heads head]
//   headPrepInPlace(qkv, rows, ..., row0 = pos)  q and k: RMS norm per head, rotary at their position
//   k, v appended to each head's cache; attention(q, k[0, pos + rows), v, 1/sqrt(head), causal)
//   x   += splitSumInto(lazyMatmul(o, Wo))        the residual add (one part)
//   h    = normRotateInto(x)
//   FFN as two shards (tensor parallel): shard s: siluMulRotatedInto(lazyMatmul(h, Wgu_s)) then
//        part s = lazyMatmul(act_s, Wdown_s); x += splitSumInto(part 0, part 1) (parts in order)
// then the last row's final norm, logits = lazyMatmul(h, embedding) and the next token.
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
  std::int64_t vocab = 32000, dim = 512, heads = 8, head = 64, layers = 4, ffn = 1536;
  std::int64_t prompt = 32, generate = 64;
  double eps = 1e-6, ropeBase = 10000.0;
  std::int64_t maxT() const { return prompt + generate; }
  std::int64_t shardFfn() const { return ffn / 2; }
};

/// A tensor of N(0, 1) values times `s` (the weights' usual fan-in scaling), made on the host from
/// the key and copied to `device`: the same weights on every device.
Tensor scaledNormal(Key key, const Shape& shape, double s, Device device) {
  std::vector<float> v = Tensor::normal(key, shape).toVector<float>();
  for (float& e : v) e = static_cast<float>(e * s);
  return Tensor::fromVector(v, shape).to(device);
}
/// 1 + 0.1 N(0, 1): a norm's weights, near one as a trained model's are.
Tensor normWeights(Key key, std::int64_t n, Device device) {
  std::vector<float> v = Tensor::normal(key, {n}).toVector<float>();
  for (float& e : v) e = 1.0f + 0.1f * e;
  return Tensor::fromVector(v, {n}).to(device);
}

struct Layer {
  Tensor attnNorm, wqkv, qNorm, kNorm, wo, ffnNorm;
  Tensor wgu[2], wdown[2];                   // the FFN's two shards
  std::vector<Tensor> kCache, vCache;        // per head [maxT, head]
};

struct Model {
  Config c;
  Device device;
  Tensor embedding, finalNorm, cos, sin;     // cos, sin [maxT, head / 2]
  std::vector<Layer> layers;

  Model(const Config& cfg, Device d) : c(cfg), device(d) {
    const double inDim = 1.0 / std::sqrt(static_cast<double>(c.dim));
    embedding = scaledNormal(Key{1, 0}, {c.vocab, c.dim}, 0.02, d);  // GPT-2's init scale
    finalNorm = normWeights(Key{2, 0}, c.dim, d);
    // Rotary tables: angle(p, e) = p / base^(2e / head), in float64, then F32.
    const std::int64_t half = c.head / 2;
    std::vector<float> cs(c.maxT() * half), sn(c.maxT() * half);
    for (std::int64_t p = 0; p < c.maxT(); ++p)
      for (std::int64_t e = 0; e < half; ++e) {
        const double angle = static_cast<double>(p) / std::pow(c.ropeBase, 2.0 * e / c.head);
        cs[p * half + e] = static_cast<float>(std::cos(angle));
        sn[p * half + e] = static_cast<float>(std::sin(angle));
      }
    cos = Tensor::fromVector(cs, {c.maxT(), half}).to(d);
    sin = Tensor::fromVector(sn, {c.maxT(), half}).to(d);
    for (std::int64_t l = 0; l < c.layers; ++l) {
      const auto k = [&](std::uint32_t i) { return Key{100 + static_cast<std::uint32_t>(l), i}; };
      Layer L;
      L.attnNorm = normWeights(k(0), c.dim, d);
      L.wqkv = scaledNormal(k(1), {3 * c.heads * c.head, c.dim}, inDim, d);
      L.qNorm = normWeights(k(2), c.head, d);
      L.kNorm = normWeights(k(3), c.head, d);
      L.wo = scaledNormal(k(4), {c.dim, c.heads * c.head}, 1.0 / std::sqrt(static_cast<double>(c.heads * c.head)), d);
      L.ffnNorm = normWeights(k(5), c.dim, d);
      for (int s = 0; s < 2; ++s) {
        L.wgu[s] = scaledNormal(k(6 + s), {2 * c.shardFfn(), c.dim}, inDim, d);
        L.wdown[s] = scaledNormal(k(8 + s), {c.dim, c.shardFfn()}, 1.0 / std::sqrt(static_cast<double>(c.ffn)), d);
      }
      for (std::int64_t h = 0; h < c.heads; ++h) {
        L.kCache.push_back(Tensor::zeros({c.maxT(), c.head}, DType::F32, d));
        L.vCache.push_back(Tensor::zeros({c.maxT(), c.head}, DType::F32, d));
      }
      layers.push_back(std::move(L));
    }
  }
};

/// One vector of `head` floats: row i of t viewed as [rows, head].
Tensor headRow(const Tensor& t, std::int64_t head, std::int64_t i) {
  return t.reshape({t.numel() / head, head}).rows(i, i + 1);
}

/// RMSNorm of rows [0, rows) of x [., dim] into y [rows, dim] (normRotateInto without rotation).
void rmsNormRows(const Gpu& g, const Config& c, const Tensor& x, const Tensor& w, const Tensor& y, std::int64_t rows) {
  netops::normRotateInto(g, rows, c.dim, c.eps, false, c.dim, 0, y.data<float>(), x.data<float>(), w.data<float>(),
                         nullptr);
}

/// Runs the model on tokens at positions [pos, pos + n) (x [n, dim] their embeddings, updated in
/// place) and returns the last row's logits [1, vocab].
Tensor forward(Model& m, const Gpu& g, Tensor& x, std::int64_t pos) {
  const Config& c = m.c;
  const std::int64_t n = x.dim(0), t = pos + n, width = c.heads * c.head;
  Tensor h = Tensor::empty({n, c.dim}, DType::F32, m.device);
  Tensor q = Tensor::empty({n, c.head}, DType::F32, m.device);
  Tensor o = Tensor::empty({n, width}, DType::F32, m.device);
  Tensor act = Tensor::empty({n, c.shardFfn()}, DType::F32, m.device);
  Tensor parts = Tensor::empty({2, n * c.dim}, DType::F32, m.device);
  for (Layer& L : m.layers) {
    rmsNormRows(g, c, x, L.attnNorm, h, n);
    Tensor qkv = lazyMatmul(h, L.wqkv).store();  // [n, 3 width]
    netops::headPrepInPlace(qkv, n, c.heads, c.head, netops::HeadPrep{L.qNorm, L.kNorm, m.cos, m.sin, c.eps}, pos);
    for (std::int64_t hd = 0; hd < c.heads; ++hd) {
      for (std::int64_t r = 0; r < n; ++r) {  // qkv row r: q heads, then k heads, then v heads
        headRow(q, c.head, r).copyFrom(headRow(qkv, c.head, (3 * r + 0) * c.heads + hd));
        headRow(L.kCache[hd], c.head, pos + r).copyFrom(headRow(qkv, c.head, (3 * r + 1) * c.heads + hd));
        headRow(L.vCache[hd], c.head, pos + r).copyFrom(headRow(qkv, c.head, (3 * r + 2) * c.heads + hd));
      }
      const Tensor a = netops::attention(q.reshape({1, n, c.head}), L.kCache[hd].rows(0, t).reshape({1, t, c.head}),
                                         L.vCache[hd].rows(0, t).reshape({1, t, c.head}),
                                         1.0 / std::sqrt(static_cast<double>(c.head)), true, 0.0, Key{0, 0});
      for (std::int64_t r = 0; r < n; ++r) headRow(o, c.head, r * c.heads + hd).copyFrom(headRow(a, c.head, r));
    }
    Tensor attnOut = lazyMatmul(o, L.wo).store();
    netops::splitSumInto(g, x.data<float>(), attnOut.data<float>(), n * c.dim, 1, true);  // x += attention
    rmsNormRows(g, c, x, L.ffnNorm, h, n);
    for (int s = 0; s < 2; ++s) {
      Tensor gu = lazyMatmul(h, L.wgu[s]).store();  // [n, 2 shardFfn]: gate, then up
      netops::siluMulRotatedInto(g, n, c.shardFfn(), 1, act.data<float>(), gu.data<float>(), nullptr);
      lazyMatmul(act, L.wdown[s]).storeInto(parts.rows(s, s + 1).reshape({n, c.dim}));
    }
    netops::splitSumInto(g, x.data<float>(), parts.data<float>(), n * c.dim, 2, true);  // x += shard 0 + shard 1
  }
  Tensor last = Tensor::empty({1, c.dim}, DType::F32, m.device);
  netops::normRotateInto(g, 1, c.dim, c.eps, false, c.dim, 0, last.data<float>(), x.rows(n - 1, n).data<float>(),
                         m.finalNorm.data<float>(), nullptr);
  return lazyMatmul(last, m.embedding).store();
}

/// The embeddings of `tokens`: rows of the embedding table.
Tensor embed(const Model& m, const std::vector<std::int64_t>& tokens) {
  Tensor x = Tensor::empty({static_cast<std::int64_t>(tokens.size()), m.c.dim}, DType::F32, m.device);
  for (std::size_t i = 0; i < tokens.size(); ++i)
    x.rows(static_cast<std::int64_t>(i), static_cast<std::int64_t>(i) + 1).copyFrom(m.embedding.rows(tokens[i], tokens[i] + 1));
  return x;
}

struct Run {
  std::vector<std::int64_t> greedy, sampled;
  double prefillSeconds = 0, decodeSeconds = 0;  // both modes' decoding together
};

/// Prefill then `generate` tokens, greedy (sampled = false) or sampled.
std::vector<std::int64_t> decode(Model& m, const Gpu& g, bool sampled, double& prefillSeconds, double& decodeSeconds) {
  const Config& c = m.c;
  std::vector<std::int64_t> prompt(static_cast<std::size_t>(c.prompt));
  for (std::int64_t i = 0; i < c.prompt; ++i) prompt[i] = static_cast<std::int64_t>(Key{7, 7}.word(i) % c.vocab);
  Tensor top = Tensor::empty({1}, DType::F32, m.device);
  Tensor cand = Tensor::empty({netops::CANDIDATE_ROW}, DType::F32, m.device);
  const auto next = [&](const Tensor& logits, std::int64_t step) -> std::int64_t {
    if (!sampled) {
      netops::argmaxInto(g, 1, c.vocab, c.vocab, false, top.data<float>(), logits.data<float>());
      return static_cast<std::int64_t>(top.toVector<float>()[0]);
    }
    netops::candidatesInto(g, 1, c.vocab, c.vocab, false, cand.data<float>(), logits.data<float>());
    const std::vector<float> host = cand.toVector<float>();
    return netops::sampleCandidates(host.data(), 0.8, 4, 0.95, Key{42, static_cast<std::uint32_t>(step)}).token;
  };
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  Tensor x = embed(m, prompt);
  std::int64_t token = next(forward(m, g, x, 0), 0);
  auto t1 = clock::now();
  std::vector<std::int64_t> out{token};
  for (std::int64_t s = 1; s < c.generate; ++s) {
    Tensor xs = embed(m, {token});
    token = next(forward(m, g, xs, c.prompt + s - 1), s);
    out.push_back(token);
  }
  auto t2 = clock::now();
  prefillSeconds += std::chrono::duration<double>(t1 - t0).count();
  decodeSeconds += std::chrono::duration<double>(t2 - t1).count();
  return out;
}

Run runAll(const Config& c, Device d) {
  const Gpu g = d.isHost() ? Gpu::host() : Gpu::open(d.index);
  Model m(c, d);
  Run r;
  r.greedy = decode(m, g, false, r.prefillSeconds, r.decodeSeconds);
  r.sampled = decode(m, g, true, r.prefillSeconds, r.decodeSeconds);
  return r;
}

std::uint64_t fingerprint(const std::vector<std::int64_t>& ids) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (std::int64_t id : ids) {
    for (int b = 0; b < 8; ++b) {
      h ^= static_cast<std::uint64_t>(id >> (8 * b)) & 0xffu;
      h *= 1099511628211ull;
    }
  }
  return h;
}

void print(const char* what, const Run& r, const Config& c) {
  std::printf("%s: greedy %016llx, sampled %016llx; prefill %.1f tokens/s, decode %.1f tokens/s\n", what,
              static_cast<unsigned long long>(fingerprint(r.greedy)), static_cast<unsigned long long>(fingerprint(r.sampled)),
              2.0 * c.prompt / r.prefillSeconds, 2.0 * (c.generate - 1) / r.decodeSeconds);
  std::printf("  greedy ids:");
  for (std::size_t i = 0; i < r.greedy.size() && i < 16; ++i) std::printf(" %lld", static_cast<long long>(r.greedy[i]));
  std::printf(" ...\n  sampled ids:");
  for (std::size_t i = 0; i < r.sampled.size() && i < 16; ++i) std::printf(" %lld", static_cast<long long>(r.sampled[i]));
  std::printf(" ...\n");
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  bool check = false, gpu = false;
  // A GPU required (--require-gpu, or GIZML_REQUIRE_GPU=1 as for the tests and gizml-check): without
  // one, fail at once, before the host runs, instead of comparing the host with itself and passing.
  const char* requireEnv = std::getenv("GIZML_REQUIRE_GPU");
  bool requireGpu = requireEnv && std::strcmp(requireEnv, "1") == 0;
  int threadCount = 0;
  std::string idsFile;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::int64_t {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gizml-decode: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atoll(argv[++i]);
    };
    if (a == "--check") check = true;
    else if (a == "--gpu") gpu = true;
    else if (a == "--require-gpu") requireGpu = true;
    else if (a == "--threads") threadCount = static_cast<int>(value());
    else if (a == "--layers") c.layers = value();
    else if (a == "--prompt") c.prompt = value();
    else if (a == "--generate") c.generate = value();
    else if (a == "--ids-file" && i + 1 < argc) idsFile = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: gizml-decode [--threads N] [--layers L] [--prompt P] [--generate G] [--gpu] [--check]\n"
                   "                    [--require-gpu] [--ids-file F]\n"
                   "  --check: also run with 1 thread (and on GPU 0 where there is one) and compare the ids\n"
                   "  --require-gpu (or GIZML_REQUIRE_GPU=1): fail when there is no GPU\n"
                   "  --ids-file: write the greedy and sampled ids to F (to compare builds and machines)\n");
      return 2;
    }
  }
  if (c.prompt < 1 || c.generate < 1 || c.layers < 1) {
    std::fprintf(stderr, "gizml-decode: --prompt, --generate and --layers must be at least 1\n");
    return 2;
  }
  try {
    if (threadCount > 0) setThreads(threadCount);
    if ((gpu || requireGpu) && gpuCount() == 0) {
      std::fprintf(stderr, "gizml-decode: FAILED: no GPU: %s\n", noGpuReason().c_str());
      return 1;
    }
    std::printf("gizml-decode: %lld layers, %lld heads of %lld, ffn %lld, vocab %lld; prompt %lld, %lld new tokens\n",
                static_cast<long long>(c.layers), static_cast<long long>(c.heads), static_cast<long long>(c.head),
                static_cast<long long>(c.ffn), static_cast<long long>(c.vocab), static_cast<long long>(c.prompt),
                static_cast<long long>(c.generate));
    const Device d = gpu ? Device::cuda(0) : Device::host();
    const Run main = runAll(c, d);
    const std::string where = gpu ? "GPU 0" : "host, " + std::to_string(threads()) + " threads";
    print(where.c_str(), main, c);
    if (!idsFile.empty()) {
      std::FILE* f = std::fopen(idsFile.c_str(), "w");
      if (!f) {
        std::fprintf(stderr, "gizml-decode: cannot write %s\n", idsFile.c_str());
        return 1;
      }
      for (const auto* ids : {&main.greedy, &main.sampled}) {
        for (std::int64_t id : *ids) std::fprintf(f, "%lld ", static_cast<long long>(id));
        std::fprintf(f, "\n");
      }
      std::fclose(f);
    }
    if (!check) return 0;
    bool same = true;
    const auto compare = [&](const char* what, const Run& other) {
      print(what, other, c);
      const bool ok = other.greedy == main.greedy && other.sampled == main.sampled;
      std::printf("  %s\n", ok ? "the same ids" : "DIFFERENT ids");
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
    std::fprintf(stderr, "gizml-decode: %s\n", e.what());
    return 1;
  }
}

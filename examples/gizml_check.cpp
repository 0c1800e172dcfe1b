// gizml-check: runs every op on the host and on every GPU found, and prints a table:
//   op | host = reference (bits) | GPU = host (bits, or "no GPU") | host time | GPU time
// Exit status 0 when every comparison that could run matched.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gizml/gizml.hpp"
#include "reference/lazy_reference.hpp"
#include "reference/rows_reference.hpp"
#include "reference/conv_reference.hpp"

using gizml::Device;
using gizml::Key;
using gizml::Tensor;
namespace netops = gizml::netops;
namespace ref = gizml::reference;

namespace {

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::isnan(a[i]) && std::isnan(b[i])) && std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
  return true;
}

/// What an op gives on one device, flattened to floats, and how long it took.
struct Run {
  std::vector<float> values;
  double ms = 0;
};

Run timed(const std::function<std::vector<float>()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  Run r{f(), 0};
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

struct Check {
  std::string op;
  std::function<std::vector<float>(Device)> run;  // the op on a device (inputs made there)
  std::function<std::vector<float>()> reference;
};

std::vector<float> cat(std::initializer_list<std::vector<float>> parts) {
  std::vector<float> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<float> asFloats(const std::vector<std::int64_t>& v) { return std::vector<float>(v.begin(), v.end()); }

}  // namespace

int main() {
  const std::int64_t rows = 64, n = 1027, classes = 5003;
  const Key kx{1, 1}, kw{2, 2}, kb{3, 3}, kd{4, 4};
  auto hx = Tensor::normal(kx, {rows, n}).toVector<float>();
  auto hw = Tensor::normal(kw, {n}).toVector<float>();
  auto hb = Tensor::normal(kb, {n}).toVector<float>();
  auto hdy = Tensor::normal(kd, {rows, n}).toVector<float>();
  auto hl = Tensor::normal(kx, {rows, classes}).toVector<float>();
  std::vector<std::int64_t> labels(rows);
  for (std::int64_t r = 0; r < rows; ++r) labels[r] = (r * 7919) % classes;
  auto on = [](const std::vector<float>& v, gizml::Shape s, Device d) { return Tensor::fromVector(v, s).to(d); };
  // Products: a [gm, gk] times w [gn, gk]; a convolution of x [cc, ch, cw] to co channels.
  const std::int64_t gm = 67, gn = 93, gk = 301, co = 16, cc = 8, ch = 12, cw = 14;
  auto ha = Tensor::normal(Key{10, 1}, {gm, gk}).toVector<float>();
  auto hwm = Tensor::normal(Key{10, 2}, {gn, gk}).toVector<float>();
  auto hbm = Tensor::normal(Key{10, 3}, {gn}).toVector<float>();
  auto hcx = Tensor::normal(Key{10, 4}, {cc, ch, cw}).toVector<float>();
  auto hcw = Tensor::normal(Key{10, 5}, {co, cc * 9}).toVector<float>();

  std::vector<Check> checks = {
      {"layerNorm",
       [&](Device d) {
         auto o = netops::layerNorm(on(hx, {rows, n}, d), on(hw, {n}, d), on(hb, {n}, d), 1e-5);
         return cat({o.y.toVector<float>(), o.mean.toVector<float>(), o.rstd.toVector<float>()});
       },
       [&] {
         std::vector<float> y(rows * n), m(rows), s(rows);
         ref::layerNorm(hx.data(), hw.data(), hb.data(), 1e-5, rows, n, y.data(), m.data(), s.data());
         return cat({y, m, s});
       }},
      {"layerNormGrad",
       [&](Device d) {
         auto f = netops::layerNorm(on(hx, {rows, n}, d), on(hw, {n}, d), on(hb, {n}, d), 1e-5);
         auto g = netops::layerNormGrad(on(hdy, {rows, n}, d), on(hx, {rows, n}, d), on(hw, {n}, d), f.mean, f.rstd);
         return cat({g.dx.toVector<float>(), g.dweight.toVector<float>(), g.dbias.toVector<float>()});
       },
       [&] {
         std::vector<float> y(rows * n), m(rows), s(rows), dx(rows * n), dw(n), db(n);
         ref::layerNorm(hx.data(), hw.data(), hb.data(), 1e-5, rows, n, y.data(), m.data(), s.data());
         ref::layerNormGrad(hdy.data(), hx.data(), hw.data(), m.data(), s.data(), rows, n, dx.data(), dw.data(), db.data());
         return cat({dx, dw, db});
       }},
      {"crossEntropyLoss",
       [&](Device d) { return std::vector<float>{static_cast<float>(netops::crossEntropyLoss(on(hl, {rows, classes}, d), labels))}; },
       [&] { return std::vector<float>{static_cast<float>(ref::crossEntropyLoss(hl.data(), rows, classes, labels))}; }},
      {"crossEntropyRows",
       [&](Device d) { return netops::crossEntropyRows(on(hl, {rows, classes}, d), labels).toVector<float>(); },
       [&] {
         std::vector<float> out(rows);
         for (std::int64_t r = 0; r < rows; ++r) out[r] = ref::crossEntropyRow(hl.data() + r * classes, classes, labels[r]);
         return out;
       }},
      {"crossEntropyGrad",
       [&](Device d) { return netops::crossEntropyGrad(on(hl, {rows, classes}, d), labels, 0.5).toVector<float>(); },
       [&] {
         std::vector<float> out(rows * classes);
         ref::crossEntropyGrad(hl.data(), rows, classes, labels, 0.5, out.data());
         return out;
       }},
      {"Tensor.argmax",
       [&](Device d) { return asFloats(on(hl, {rows, classes}, d).argmax()); },
       [&] {
         std::vector<std::int64_t> out(rows);
         for (std::int64_t r = 0; r < rows; ++r) out[r] = ref::argmaxRow(hl.data() + r * classes, classes);
         return asFloats(out);
       }},
      {"Tensor.dropout",
       [&](Device d) { return on(hx, {rows, n}, d).dropout(Key{5, 5}, 0.2).toVector<float>(); },
       [&] {
         std::vector<float> out(rows * n);
         ref::dropout(hx.data(), rows * n, Key{5, 5}, 0.2, out.data());
         return out;
       }},
      {"lazyMatmul+epilogue",
       [&](Device d) {
         return gizml::lazyMatmul(on(ha, {gm, gk}, d), on(hwm, {gn, gk}, d)).bias(on(hbm, {gn}, d)).gelu().scale(0.5)
             .store().toVector<float>();
       },
       [&] {
         std::vector<float> out(gm * gn);
         ref::matmul(ha.data(), hwm.data(), gm, gn, gk, out.data());
         for (std::int64_t i = 0; i < gm * gn; ++i)
           out[i] = ref::epilogueStep(1, ref::epilogueStep(3, ref::epilogueStep(0, out[i], hbm[i % gn], 0), 0, 0), 0, 0.5f);
         return out;
       }},
      {"affine",
       [&](Device d) { return netops::affine(on(ha, {gm, gk}, d), on(hwm, {gn, gk}, d), on(hbm, {gn}, d)).toVector<float>(); },
       [&] {
         std::vector<float> out(gm * gn);
         ref::matmul(ha.data(), hwm.data(), gm, gn, gk, out.data());
         for (std::int64_t i = 0; i < gm * gn; ++i) out[i] = out[i] + hbm[i % gn];
         return out;
       }},
      {"patchRows",
       [&](Device d) { return netops::patchRows(on(hcx, {cc, ch, cw}, d), 3, 3, 1, 2, 9).toVector<float>(); },
       [&] {
         std::vector<float> out(cc * 9 * 7 * cw);
         ref::patchRows(hcx.data(), cc, ch, cw, 3, 3, 1, 2, 9, out.data());
         return out;
       }},
      {"lazyConv",
       [&](Device d) { return gizml::lazyConv(on(hcw, {co, cc * 9}, d), on(hcx, {cc, ch, cw}, d), 3, 3, 1).store().toVector<float>(); },
       [&] {
         std::vector<float> out(co * ch * cw);
         ref::conv(hcw.data(), hcx.data(), co, cc, ch, cw, 3, 3, 1, out.data());
         return out;
       }},
      // ---- convolution and pooling (each entry makes its inputs once, from fixed keys) ----
      {"im2col",
       [x = Tensor::normal(Key{20, 1}, {2, 8, 20, 20}).toVector<float>(), &on](Device d) {
         return netops::im2col(on(x, {2, 8, 20, 20}, d), 3, 3, 1, 1).toVector<float>();
       },
       [x = Tensor::normal(Key{20, 1}, {2, 8, 20, 20}).toVector<float>()] {
         std::vector<float> out(2 * 20 * 20 * 8 * 9);
         ref::im2col(x.data(), 2, 8, 20, 20, 3, 3, 1, 1, out.data());
         return out;
       }},
      {"col2im",
       [c = Tensor::normal(Key{20, 2}, {2 * 10 * 10, 8 * 9}).toVector<float>(), &on](Device d) {
         return netops::col2im(on(c, {200, 72}, d), 2, 8, 20, 20, 3, 3, 2, 1).toVector<float>();
       },
       [c = Tensor::normal(Key{20, 2}, {2 * 10 * 10, 8 * 9}).toVector<float>()] {
         std::vector<float> out(2 * 8 * 20 * 20);
         ref::col2im(c.data(), 2, 8, 20, 20, 3, 3, 2, 1, out.data());
         return out;
       }},
      {"im2col1d",
       [x = Tensor::normal(Key{20, 3}, {1000, 64}).toVector<float>(), &on](Device d) {
         return netops::im2col1d(on(x, {1000, 64}, d), 5, 2, 2, 2, 10, 400).toVector<float>();
       },
       [x = Tensor::normal(Key{20, 3}, {1000, 64}).toVector<float>()] {
         std::vector<float> out(400 * 64 * 5);
         ref::im2col1d(x.data(), 1000, 64, 5, 2, 2, 2, 10, 400, out.data());
         return out;
       }},
      {"col2im1d",
       [c = Tensor::normal(Key{20, 4}, {150, 32 * 4}).toVector<float>(), &on](Device d) {
         return netops::col2im1d(on(c, {150, 128}, d), 32, 300, 4, 2, 1).toVector<float>();
       },
       [c = Tensor::normal(Key{20, 4}, {150, 32 * 4}).toVector<float>()] {
         std::vector<float> out(300 * 32);
         ref::col2im1d(c.data(), 150, 32, 300, 4, 2, 1, out.data());
         return out;
       }},
      {"conv1d",
       [x = Tensor::normal(Key{20, 5}, {512, 64}).toVector<float>(), w = Tensor::normal(Key{20, 6}, {96, 64, 5}).toVector<float>(),
        b = Tensor::normal(Key{20, 7}, {96}).toVector<float>(), &on](Device d) {
         return netops::conv1d(on(x, {512, 64}, d), on(w, {96, 64, 5}, d), {on(b, {96}, d)}, 1, 2, 1).toVector<float>();
       },
       [x = Tensor::normal(Key{20, 5}, {512, 64}).toVector<float>(), w = Tensor::normal(Key{20, 6}, {96, 64, 5}).toVector<float>(),
        b = Tensor::normal(Key{20, 7}, {96}).toVector<float>()] {
         std::vector<float> out(512 * 96);
         ref::conv1d(x.data(), 512, 64, w.data(), 96, 5, b.data(), 1, 2, 1, out.data());
         return out;
       }},
      {"convTranspose1d",
       [x = Tensor::normal(Key{20, 8}, {128, 64}).toVector<float>(), w = Tensor::normal(Key{20, 9}, {64, 48, 4}).toVector<float>(),
        b = Tensor::normal(Key{20, 10}, {48}).toVector<float>(), &on](Device d) {
         return netops::convTranspose1d(on(x, {128, 64}, d), on(w, {64, 48, 4}, d), {on(b, {48}, d)}, 2, 1).toVector<float>();
       },
       [x = Tensor::normal(Key{20, 8}, {128, 64}).toVector<float>(), w = Tensor::normal(Key{20, 9}, {64, 48, 4}).toVector<float>(),
        b = Tensor::normal(Key{20, 10}, {48}).toVector<float>()] {
         std::vector<float> out(256 * 48);
         ref::convTranspose1d(x.data(), 128, 64, w.data(), 48, 4, b.data(), 2, 1, out.data());
         return out;
       }},
      {"pool2d max",
       [x = Tensor::normal(Key{20, 11}, {4, 16, 64, 64}).toVector<float>(), &on](Device d) {
         return netops::pool2d(on(x, {4, 16, 64, 64}, d), 3, 2, false).toVector<float>();
       },
       [x = Tensor::normal(Key{20, 11}, {4, 16, 64, 64}).toVector<float>()] {
         std::vector<float> out(4 * 16 * 31 * 31);
         ref::pool2d(x.data(), 4, 16, 64, 64, 3, 2, false, out.data());
         return out;
       }},
      {"pool2d average",
       [x = Tensor::normal(Key{20, 11}, {4, 16, 64, 64}).toVector<float>(), &on](Device d) {
         return netops::pool2d(on(x, {4, 16, 64, 64}, d), 2, 2, true).toVector<float>();
       },
       [x = Tensor::normal(Key{20, 11}, {4, 16, 64, 64}).toVector<float>()] {
         std::vector<float> out(4 * 16 * 32 * 32);
         ref::pool2d(x.data(), 4, 16, 64, 64, 2, 2, true, out.data());
         return out;
       }},
      {"pool2dGrad max",
       [x = Tensor::normal(Key{20, 12}, {2, 8, 32, 32}).toVector<float>(),
        dy = Tensor::normal(Key{20, 13}, {2, 8, 15, 15}).toVector<float>(), &on](Device d) {
         return netops::pool2dGrad(on(dy, {2, 8, 15, 15}, d), on(x, {2, 8, 32, 32}, d), 3, 2, false).toVector<float>();
       },
       [x = Tensor::normal(Key{20, 12}, {2, 8, 32, 32}).toVector<float>(),
        dy = Tensor::normal(Key{20, 13}, {2, 8, 15, 15}).toVector<float>()] {
         std::vector<float> out(2 * 8 * 32 * 32);
         ref::pool2dGrad(dy.data(), x.data(), 2, 8, 32, 32, 3, 2, false, out.data());
         return out;
       }},
      {"pool2dGrad average",
       [x = Tensor::normal(Key{20, 12}, {2, 8, 32, 32}).toVector<float>(),
        dy = Tensor::normal(Key{20, 13}, {2, 8, 15, 15}).toVector<float>(), &on](Device d) {
         return netops::pool2dGrad(on(dy, {2, 8, 15, 15}, d), on(x, {2, 8, 32, 32}, d), 3, 2, true).toVector<float>();
       },
       [x = Tensor::normal(Key{20, 12}, {2, 8, 32, 32}).toVector<float>(),
        dy = Tensor::normal(Key{20, 13}, {2, 8, 15, 15}).toVector<float>()] {
         std::vector<float> out(2 * 8 * 32 * 32);
         ref::pool2dGrad(dy.data(), x.data(), 2, 8, 32, 32, 3, 2, true, out.data());
         return out;
       }},
      {"causalMask (host)",
       [](Device) { return netops::causalMask(100, 300).toVector<float>(); },  // a host op wherever it is asked
       [] {
         std::vector<float> out(100 * 300);
         ref::causalMask(100, 300, out.data());
         return out;
       }},
  };

  const int gpus = gizml::gpuCount();
  std::printf("gizml-check: %d host threads, %s, %d CUDA GPU%s\n", gizml::threads(),
              gizml::builtWithCuda() ? "built with CUDA" : "built without CUDA", gpus, gpus == 1 ? "" : "s");
  std::printf("%-20s | %-22s | %-22s | %10s | %10s\n", "op", "host = reference", "GPU = host", "host ms", "GPU ms");
  std::printf("%s\n", std::string(96, '-').c_str());
  bool allMatch = true;
  for (const auto& c : checks) {
    std::vector<float> want = c.reference();
    c.run(Device::host());  // warm up
    Run h = timed([&] { return c.run(Device::host()); });
    bool hostOk = sameBits(h.values, want);
    allMatch = allMatch && hostOk;
    std::string gpuCol = "no GPU", gpuMs = "-";
    for (int g = 0; g < gpus; ++g) {
      try {
        c.run(Device::cuda(g));
        Run d = timed([&] { return c.run(Device::cuda(g)); });
        bool ok = sameBits(d.values, h.values);
        allMatch = allMatch && ok;
        gpuCol = (g ? gpuCol + ", " : std::string()) + "cuda:" + std::to_string(g) + (ok ? " yes" : " NO");
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3f", d.ms);
        gpuMs = buf;
      } catch (const std::exception& e) {
        allMatch = false;
        gpuCol = std::string("error: ") + e.what();
      }
    }
    std::printf("%-20s | %-22s | %-22s | %10.3f | %10s\n", c.op.c_str(), hostOk ? "yes" : "NO", gpuCol.c_str(), h.ms,
                gpuMs.c_str());
  }
  std::printf("%s\n", allMatch ? "every comparison matched bit for bit" : "MISMATCH: see the table");
  return allMatch ? 0 : 1;
}

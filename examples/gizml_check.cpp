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
#include "reference/rows_reference.hpp"

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
  };

  const int gpus = gizml::gpuCount();
  std::printf("gizml-check: %d host threads, %s, %d CUDA GPU%s\n", gizml::threads(),
              gizml::builtWithCuda() ? "built with CUDA" : "built without CUDA", gpus, gpus == 1 ? "" : "s");
  std::printf("%-18s | %-22s | %-22s | %10s | %10s\n", "op", "host = reference", "GPU = host", "host ms", "GPU ms");
  std::printf("%s\n", std::string(94, '-').c_str());
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
    std::printf("%-18s | %-22s | %-22s | %10.3f | %10s\n", c.op.c_str(), hostOk ? "yes" : "NO", gpuCol.c_str(), h.ms,
                gpuMs.c_str());
  }
  std::printf("%s\n", allMatch ? "every comparison matched bit for bit" : "MISMATCH: see the table");
  return allMatch ? 0 : 1;
}

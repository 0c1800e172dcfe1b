// sampleCandidates: a token drawn on the host from one row of candidatesInto's output (SPEC §3).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "exact/order.hpp"
#include "gizml/error.hpp"
#include "gizml/netops/step.hpp"

namespace gizml::netops {

Sampled sampleCandidates(const float* cand, double temperature, std::int64_t topK, double topP, Key key) {
  const char* fn = "gizml::netops::sampleCandidates";
  if (!cand) fail(fn, "cand", "expected an address, got null");
  if (!(temperature >= 0.0)) fail(fn, "temperature", "expected temperature >= 0, got " + std::to_string(temperature));
  if (topK < 0) fail(fn, "topK", "expected topK >= 0 (0: no top-k), got " + std::to_string(topK));
  if (!(topP > 0.0 && topP <= 1.0)) fail(fn, "topP", "expected topP in (0, 1], got " + std::to_string(topP));

  struct Candidate {
    float value;
    std::int64_t token;
  };
  std::vector<Candidate> all;
  for (int i = 0; i < CANDIDATE_ROW; i += 2)
    if (cand[i + 1] >= 0.0f) all.push_back({cand[i], static_cast<std::int64_t>(cand[i + 1])});
  if (all.empty()) return {0, false};  // a row of NaN: the argmax's token 0
  std::sort(all.begin(), all.end(),
            [](const Candidate& a, const Candidate& b) { return exact::argmaxBetter(a.value, a.token, b.value, b.token); });
  if (temperature == 0.0) return {all[0].token, false};

  const std::size_t k = topK == 0 ? all.size() : std::min<std::size_t>(static_cast<std::size_t>(topK), all.size());
  // May the true top-k have been cut? A worker with every slot filled above the threshold.
  const bool everything = topK == 0 || k == all.size();
  const float threshold = all[k - 1].value;
  bool mayBeCut = false;
  for (int w = 0; w < CANDIDATE_WORKERS; ++w) {
    const float* last = cand + 2 * TOP_EACH * w + 2 * (TOP_EACH - 1);
    if (last[1] >= 0.0f && (everything || last[0] > threshold)) mayBeCut = true;
  }

  std::vector<double> p(k);
  double total = 0;
  for (std::size_t i = 0; i < k; ++i) {
    // A value equal to the largest weighs 1, which also settles a largest of +inf or -inf.
    const double d = static_cast<double>(all[i].value) - all[0].value;
    p[i] = all[i].value == all[0].value ? 1.0 : std::exp(d / temperature);
    total += p[i];
  }
  std::size_t kept = k;  // top-p: the shortest prefix reaching topP of the probability
  double running = 0;
  for (std::size_t i = 0; i < k; ++i) {
    running += p[i] / total;
    if (running >= topP) {
      kept = i + 1;
      break;
    }
  }
  double keptTotal = 0;
  for (std::size_t i = 0; i < kept; ++i) keptTotal += p[i];
  const double target = static_cast<double>(key.uniform(0)) * keptTotal;
  running = 0;
  for (std::size_t i = 0; i < kept; ++i) {
    running += p[i];
    if (running > target) return {all[i].token, mayBeCut};
  }
  return {all[kept - 1].token, mayBeCut};
}

}  // namespace gizml::netops

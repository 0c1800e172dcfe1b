// A host emulation of attentionRows' quantized GPU path (flash_quant_cuda.cu), step by step from
// the same functions (src/netops/attention/sage_quant.hpp, flash_step.hpp) and the same blocks: Q's
// scales a block of 16 rows, K's a block of 64 keys, both from the group's first row; the online
// softmax and the two-level P V accumulation a block of 64 keys. Integer dots are exact in int32;
// E4M3 products are exact in F32 and summed in key order. What it does not reproduce: the FP8
// instruction's internal accumulation and the kernel's order of l's partial sums, so the GPU agrees
// with it closely, not bit for bit. Used by tests/sage_quant_test.cpp and the GPU test of
// tests/attention_test.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "exact/convert.hpp"
#include "netops/attention/flash_step.hpp"
#include "netops/attention/sage_quant.hpp"

namespace gizml::test {

struct SageOptions {
  bool subtractKeyMean = true;  // false: the broken variant (K quantized with its offsets)
  // For measuring where the error comes from: false keeps that step's values in F32 (Q K'ᵀ from the
  // unquantized q and k'; P as p 448; V as v / vScale).
  bool quantizeQK = true, quantizeP = true, quantizeV = true;
};

/// The quantized attendedRows of qkv [rows, 3 heads head] (F32, prep already applied): [outRows,
/// heads head] with outRows = queries or rows.
inline std::vector<float> sageEmulate(const std::vector<float>& qkv, std::int64_t rows, std::int64_t heads,
                                      std::int64_t head, std::int64_t group, std::int64_t queries, SageOptions opt) {
  namespace attn = gizml::netops::attn;
  const std::int64_t g = group == 0 ? rows : group, outRows = queries > 0 ? queries : rows;
  const std::int64_t width = 3 * heads * head, d = head;
  const float softmaxScale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head)));
  std::vector<float> out(static_cast<std::size_t>(outRows * heads * head), 0.0f);
  for (std::int64_t first = 0; first < outRows; first += g)
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::int64_t tq = std::min(g, outRows - first), tk = g;
      auto at = [&](int part, std::int64_t j, std::int64_t c) { return qkv[(first + j) * width + (part * heads + h) * d + c]; };
      // 1. K's channel means; V's channel scales.
      std::vector<float> mean(d, 0.0f), vScale(d);
      for (std::int64_t c = 0; c < d; ++c) {
        // Each block of 64 keys' sum in key order, the blocks' sums in block order.
        float sum = 0.0f, vMax = 0.0f;
        for (std::int64_t j0 = 0; j0 < tk; j0 += attn::kSageKBlock) {
          float block = 0.0f;
          for (std::int64_t j = j0; j < std::min<std::int64_t>(tk, j0 + attn::kSageKBlock); ++j) {
            block = block + at(1, j, c);
            vMax = std::max(vMax, std::fabs(at(2, j, c)));
          }
          sum = sum + block;
        }
        if (opt.subtractKeyMean) mean[c] = attn::keyMean(sum, tk);
        vScale[c] = attn::vScaleOf(vMax);
      }
      // 2. Codes and block scales.
      std::vector<std::int8_t> qc(tq * d), kc(tk * d);
      std::vector<std::uint8_t> vc(tk * d);
      std::vector<float> qs((tq + attn::kSageQBlock - 1) / attn::kSageQBlock),
          ks((tk + attn::kSageKBlock - 1) / attn::kSageKBlock);
      for (std::size_t b = 0; b < qs.size(); ++b) {
        float m = 0.0f;
        for (std::int64_t i = b * attn::kSageQBlock; i < std::min<std::int64_t>(tq, (b + 1) * attn::kSageQBlock); ++i)
          for (std::int64_t c = 0; c < d; ++c) m = std::max(m, std::fabs(at(0, i, c)));
        qs[b] = attn::int8Scale(m);
        for (std::int64_t i = b * attn::kSageQBlock; i < std::min<std::int64_t>(tq, (b + 1) * attn::kSageQBlock); ++i)
          for (std::int64_t c = 0; c < d; ++c) qc[i * d + c] = attn::int8Code(at(0, i, c), qs[b]);
      }
      for (std::size_t b = 0; b < ks.size(); ++b) {
        float m = 0.0f;
        const std::int64_t j1 = std::min<std::int64_t>(tk, (b + 1) * attn::kSageKBlock);
        for (std::int64_t j = b * attn::kSageKBlock; j < j1; ++j)
          for (std::int64_t c = 0; c < d; ++c) m = std::max(m, std::fabs(attn::centeredKey(at(1, j, c), mean[c])));
        ks[b] = attn::int8Scale(m);
        for (std::int64_t j = b * attn::kSageKBlock; j < j1; ++j)
          for (std::int64_t c = 0; c < d; ++c) kc[j * d + c] = attn::int8Code(attn::centeredKey(at(1, j, c), mean[c]), ks[b]);
      }
      for (std::int64_t j = 0; j < tk; ++j)
        for (std::int64_t c = 0; c < d; ++c) vc[j * d + c] = attn::vCode(at(2, j, c), vScale[c]);
      // 3-7. Per query: blocks of 64 keys.
      std::vector<float> o(d), block(d), s(attn::kSageKBlock), p(attn::kSageKBlock);
      for (std::int64_t i = 0; i < tq; ++i) {
        attn::OnlineRow row;
        std::fill(o.begin(), o.end(), 0.0f);
        for (std::int64_t j0 = 0; j0 < tk; j0 += attn::kSageKBlock) {
          const float factor = attn::scoreScale(qs[i / attn::kSageQBlock], ks[j0 / attn::kSageKBlock], softmaxScale);
          for (int jj = 0; jj < attn::kSageKBlock; ++jj) {
            const std::int64_t j = j0 + jj;
            std::int32_t dot = 0;
            float exactScore = 0.0f;
            if (j < tk)
              for (std::int64_t c = 0; c < d; ++c) {
                dot += std::int32_t(qc[i * d + c]) * std::int32_t(kc[j * d + c]);
                exactScore = exactScore + at(0, i, c) * attn::centeredKey(at(1, j, c), mean[c]);
              }
            const float score = opt.quantizeQK ? attn::quantScore(dot, factor) : exactScore * softmaxScale;
            s[jj] = attn::maskedScore(score, j < tk);
          }
          const float cFactor = attn::blockStep(row, s.data(), p.data(), attn::kSageKBlock);
          std::fill(block.begin(), block.end(), 0.0f);
          for (int jj = 0; jj < attn::kSageKBlock && j0 + jj < tk; ++jj) {
            const float pq = opt.quantizeP ? exact::e4m3ToFloat(attn::pCode(p[jj])) : p[jj] * attn::kE4M3Max;
            for (std::int64_t c = 0; c < d; ++c) {
              const float vq = opt.quantizeV ? exact::e4m3ToFloat(vc[(j0 + jj) * d + c])
                                             : (vScale[c] == 0.0f ? 0.0f : at(2, j0 + jj, c) / vScale[c]);
              block[c] = block[c] + pq * vq;
            }
          }
          for (std::int64_t c = 0; c < d; ++c) o[c] = attn::addBlock(o[c], cFactor, block[c]);
        }
        for (std::int64_t c = 0; c < d; ++c)
          out[(first + i) * heads * d + h * d + c] = attn::sageOutput(o[c], row.l, vScale[c], tk > 0);
      }
    }
  return out;
}

/// The SPEC's measures of a quantized result against the exact one: cosine similarity and
/// relative L1 (sum |got - want| / sum |want|), over the whole output, in float64.
struct SageError {
  double cosine, relL1;
};
inline SageError sageError(const std::vector<float>& got, const std::vector<float>& want) {
  double dot = 0, gg = 0, ww = 0, diff = 0, absW = 0;
  for (std::size_t i = 0; i < want.size() && i < got.size(); ++i) {
    dot += double(got[i]) * want[i];
    gg += double(got[i]) * got[i];
    ww += double(want[i]) * want[i];
    diff += std::fabs(double(got[i]) - want[i]);
    absW += std::fabs(double(want[i]));
  }
  if (got.size() != want.size()) return {0.0, INFINITY};
  const double cosine = gg == 0 && ww == 0 ? 1.0 : dot / std::sqrt(gg * ww);
  return {cosine, absW == 0 ? (diff == 0 ? 0.0 : INFINITY) : diff / absW};
}

}  // namespace gizml::test

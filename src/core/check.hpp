// Precondition checks shared by every op: each throws gizml::Error naming the function, the
// argument and what was expected (SPEC §1.7), before any work is done.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "gizml/error.hpp"
#include "gizml/tensor.hpp"

namespace gizml::detail {

inline void requireDefined(const char* fn, const char* arg, const Tensor& t) {
  if (!t.defined()) fail(fn, arg, "expected a tensor, got an empty Tensor()");
}

inline void requireDType(const char* fn, const char* arg, const Tensor& t, DType want) {
  requireDefined(fn, arg, t);
  if (t.dtype() != want) fail(fn, arg, "expected dtype " + dtypeName(want) + ", got " + dtypeName(t.dtype()));
}

inline void requireShape(const char* fn, const char* arg, const Tensor& t, const Shape& want) {
  if (t.shape() != want) fail(fn, arg, "expected shape " + shapeString(want) + ", got " + shapeString(t.shape()));
}

/// requireShape of a shape written in place ({rows, 1}): compared without making a Shape, whose
/// allocation each call was a decode step's small op's cost (a Shape is made only to fail).
inline void requireShape(const char* fn, const char* arg, const Tensor& t, std::initializer_list<std::int64_t> want) {
  const Shape& have = t.shape();
  if (!std::equal(have.begin(), have.end(), want.begin(), want.end())) requireShape(fn, arg, t, Shape(want));
}

inline void requireRankAtLeast(const char* fn, const char* arg, const Tensor& t, int rank) {
  if (t.rank() < rank)
    fail(fn, arg, "expected rank >= " + std::to_string(rank) + ", got shape " + shapeString(t.shape()));
}

inline void requireRank(const char* fn, const char* arg, const Tensor& t, int rank) {
  if (t.rank() != rank)
    fail(fn, arg, "expected rank " + std::to_string(rank) + ", got shape " + shapeString(t.shape()));
}

/// A vector argument: F32 [n].
inline void requireVector(const char* fn, const char* arg, const Tensor& t, std::int64_t n) {
  requireDType(fn, arg, t, DType::F32);
  requireShape(fn, arg, t, {n});
}

/// eps >= 0 (NaN is not), rounded once to F32 (SPEC §1).
inline float checkedEps(const char* fn, double eps) {
  if (!(eps >= 0.0)) fail(fn, "eps", "expected eps >= 0, got " + std::to_string(eps));
  return static_cast<float>(eps);
}

/// Whether the bytes [a, a + aBytes) and [b, b + bBytes) share one.
inline bool spansOverlap(const void* a, std::size_t aBytes, const void* b, std::size_t bBytes) {
  if (aBytes == 0 || bBytes == 0) return false;
  const auto *a0 = static_cast<const char*>(a), *b0 = static_cast<const char*>(b);
  return a0 < b0 + bBytes && b0 < a0 + aBytes;
}

/// Whether a and b share a byte of memory (both defined; a tensor's bytes are one span from raw()).
inline bool overlaps(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && spansOverlap(a.raw(), a.bytes(), b.raw(), b.bytes());
}

/// An op's output shares no byte with the named inputs (an op writing where it still reads gives
/// values that depend on its order of work): each named input is apart from `out`, except
/// `inPlace` (nullptr for none), which may also be out itself — the same address and bytes.
inline void requireApart(const char* fn, const char* outName, const Tensor& out,
                         std::initializer_list<std::pair<const char*, const Tensor*>> inputs,
                         const Tensor* inPlace = nullptr) {
  for (const auto& [name, t] : inputs) {
    if (!overlaps(out, *t)) continue;
    if (t == inPlace && out.raw() == t->raw() && out.bytes() == t->bytes()) continue;
    const std::string itself = t == inPlace ? " (or " + std::string(name) + " itself)" : "";
    fail(fn, outName, "expected memory apart from " + std::string(name) + itself + ", got an overlap");
  }
}

/// All named tensors on the first one's device.
inline void requireSameDevice(const char* fn, std::initializer_list<std::pair<const char*, const Tensor*>> ts) {
  const auto& first = *ts.begin();
  for (const auto& [name, t] : ts)
    if (t->device() != first.second->device())
      fail(fn, name,
           "expected the device of " + std::string(first.first) + " (" + first.second->device().name() +
               "), got " + t->device().name());
}

inline void requireLabels(const char* fn, const std::vector<std::int64_t>& labels, std::int64_t rows,
                          std::int64_t classes) {
  if (static_cast<std::int64_t>(labels.size()) != rows)
    fail(fn, "labels", "expected one label a row (" + std::to_string(rows) + "), got " + std::to_string(labels.size()));
  for (std::size_t r = 0; r < labels.size(); ++r)
    if (labels[r] < 0 || labels[r] >= classes)
      fail(fn, "labels",
           "expected labels in [0, " + std::to_string(classes) + "), got " + std::to_string(labels[r]) +
               " at row " + std::to_string(r));
}

}  // namespace gizml::detail

// Bit-for-bit comparison of results, without GoogleTest (gizml-check uses it too).
//
// "The same bits" for NaN: a NaN result is a NaN on every device; its sign and payload are not
// part of the contract (x86 and CUDA make different NaN payloads), so any two NaNs compare equal.
// Every other value, -0 and the infinities included, must match bit for bit.
#pragma once

#include <string>
#include <vector>

namespace gizml::test {

/// Empty when got and want hold the same bits (any NaN equals any NaN); else how many elements
/// differ, the first differing index, and both values with their bit patterns.
std::string bitDifference(const std::vector<float>& got, const std::vector<float>& want);
std::string bitDifference(const std::vector<double>& got, const std::vector<double>& want);

}  // namespace gizml::test

// The 8-bit rows on a CUDA GPU: each row a half-warp running the row function of quant.hpp (the
// same source as the host's, so the same stages, the same order and the same bits).
#include "core/cuda_rows.cuh"
#include "netops/quant/quant.hpp"

namespace gizml::netops::quant {

void HadamardRows::cuda(const Gpu& g, const Args& a) { detail::launchRows<HadamardRows>(g, a); }

void Int8Rows::cuda(const Gpu& g, const Args& a) { detail::launchRows<Int8Rows>(g, a); }

void ModulatedInt8Rows::cuda(const Gpu& g, const Args& a) { detail::launchMappedRows<ModulatedInt8Rows>(g, a, "map"); }

}  // namespace gizml::netops::quant

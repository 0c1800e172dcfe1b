// The CUDA side of the core: device discovery, stream-ordered memory, copies, the device error
// flag, the launch checks, and the random fills.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "core/backend.hpp"
#include "core/cuda_launch.cuh"
#include "core/cuda_row_blocks.cuh"
#include "core/cuda_rows.cuh"
#include "exact/math.hpp"
#include "exact/philox.hpp"
#include "gizml/error.hpp"

namespace gizml::detail {

void cudaCheck(int status, const char* function) {
  if (status == cudaSuccess) return;
  const auto e = static_cast<cudaError_t>(status);
  throw Error(std::string(function) + ": CUDA error " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

bool cudaSimulated() {
#if defined(GIZML_CUDA_SIM)
  return true;
#else
  return false;
#endif
}

int cudaDeviceCount(std::string& problem) {
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status != cudaSuccess) {
    // No GPU, no driver, or a driver older than this runtime: keep CUDA's words, which tell them apart.
    problem = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
    cudaGetLastError();
    return 0;
  }
  if (n == 0) problem = "cudaGetDeviceCount: no CUDA GPU is present";
  return n;
}

// ---- memory -------------------------------------------------------------------------------------

namespace {
constexpr int kMaxDevices = 64;

/// Once per device: whether it has stream-ordered memory pools (cudaMallocAsync), and if so its
/// default pool keeps freed memory (release threshold: all of it), so stream-ordered allocations
/// are reused instead of returned to the driver at each synchronisation.
bool usesMemoryPool(int device) {
  static std::once_flag once[kMaxDevices];
  static bool pooled[kMaxDevices] = {};
  if (device < 0 || device >= kMaxDevices) return false;
  std::call_once(once[device], [device] {
    int supported = 0;
    if (cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device) != cudaSuccess || !supported) {
      cudaGetLastError();
      return;
    }
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    std::uint64_t keep = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    pooled[device] = true;
  });
  return pooled[device];
}
}  // namespace

void* cudaAllocate(int device, std::size_t bytes) {
  cudaCheck(cudaSetDevice(device), "gizml::Tensor (cudaSetDevice)");
  void* p = nullptr;
  // On the default stream: every op on tensors runs there, so the memory is ready in order.
  if (usesMemoryPool(device)) cudaCheck(cudaMallocAsync(&p, bytes, cudaStreamLegacy), "gizml::Tensor (cudaMallocAsync)");
  else cudaCheck(cudaMalloc(&p, bytes), "gizml::Tensor (cudaMalloc)");
  return p;
}

void cudaRelease(int device, void* p) noexcept {
  cudaSetDevice(device);
  // After the queued work that uses it; the host does not wait (cudaFree would).
  if (usesMemoryPool(device)) cudaFreeAsync(p, cudaStreamLegacy);
  else cudaFree(p);
}

// ---- the row launches' grid ------------------------------------------------------------------

unsigned rowBlocksCap(int device, long rowsPerSm, int rowsPerBlock) {
  if (rowsPerSm == 0) return kMostBlocks;
  const unsigned sms = multiprocessors(device);
  if (sms == 0) return kMostBlocks;
  const unsigned perSm = rowsPerSm / rowsPerBlock > 0 ? static_cast<unsigned>(rowsPerSm / rowsPerBlock) : 1;
  const std::uint64_t blocks = static_cast<std::uint64_t>(sms) * perSm;
  return stridingBlocks(static_cast<std::int64_t>(blocks));
}

unsigned multiprocessors(int device) {
  if (device < 0 || device >= kMaxDevices) return 0;
  static std::once_flag once[kMaxDevices];
  static unsigned sms[kMaxDevices] = {};
  std::call_once(once[device], [device] {
    int count = 0;
    if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) cudaGetLastError();
    sms[device] = count > 0 ? static_cast<unsigned>(count) : 0;
  });
  return sms[device];
}

namespace {
/// What CUDA said of a kernel on a device: its occupancy at a launch shape, its shared-memory leave.
struct KernelFacts {
  std::mutex lock;
  std::map<std::tuple<int, const void*, unsigned, std::size_t>, int> resident;
  std::map<std::pair<int, const void*>, std::size_t> sharedAllowed;
  std::map<std::tuple<int, const void*, std::size_t, int>, int> carveoutFor;  // preferSharedFor's percent
  std::map<std::pair<int, const void*>, int> carveout;                         // the percent last set
};
KernelFacts& kernelFacts() {
  static KernelFacts facts;
  return facts;
}

/// Sets kernel's carveout hint to `percent` (-1: none, the driver's own split) where the last one
/// set differs; f.lock held. A kernel never given a hint has none: -1 asks nothing of CUDA.
void setCarveout(KernelFacts& f, int device, const void* kernel, int percent) {
  const auto key = std::make_pair(device, kernel);
  const auto last = f.carveout.find(key);
  if (last == f.carveout.end() ? percent == -1 : last->second == percent) return;
  if (cudaSetDevice(device) != cudaSuccess ||
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, percent) != cudaSuccess) {
    cudaGetLastError();  // a hint not given
    return;
  }
  f.carveout[key] = percent;
}
}  // namespace

int residentPerMultiprocessor(int device, const void* kernel, unsigned threads, std::size_t sharedBytes) {
  KernelFacts& f = kernelFacts();
  const auto key = std::make_tuple(device, kernel, threads, sharedBytes);
  // Held across the question: the answer is kept for every later launch, so it is asked without
  // a carveout hint that another launch's plan left on the kernel (preferSharedFor), which CUDA's
  // occupancy may count, and no other thread sets one meanwhile.
  std::lock_guard<std::mutex> g(f.lock);
  if (const auto it = f.resident.find(key); it != f.resident.end()) return it->second;
  setCarveout(f, device, kernel, -1);
  int perSm = 0;
  if (cudaSetDevice(device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, static_cast<int>(threads), sharedBytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  // A 0 (or an error) is not kept: a kernel not yet allowed its shared memory is asked again once
  // it is (allowSharedOnce), so a larger leave needs nothing kept to be forgotten.
  if (perSm > 0) f.resident[key] = perSm;
  return perSm;
}

void preferSharedFor(int device, const void* kernel, std::size_t sharedBytes, int blocks) {
  KernelFacts& f = kernelFacts();
  std::lock_guard<std::mutex> g(f.lock);
  if (blocks <= 0) {  // no hint: undo one that an earlier launch of the kernel left
    setCarveout(f, device, kernel, -1);
    return;
  }
  // Asked at every such launch: CUDA is asked once for each (device, kernel, bytes, blocks), and
  // the attribute set only where the kernel's last one differs.
  const auto asked = std::make_tuple(device, kernel, sharedBytes, blocks);
  auto it = f.carveoutFor.find(asked);
  if (it == f.carveoutFor.end()) {
    int most = 0, reserved = 0;
    cudaFuncAttributes facts{};
    if (cudaSetDevice(device) != cudaSuccess ||
        cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device) != cudaSuccess ||
        cudaFuncGetAttributes(&facts, kernel) != cudaSuccess || most <= 0) {
      cudaGetLastError();  // a hint not given: the driver's own split
      return;
    }
    const std::size_t need = static_cast<std::size_t>(blocks) * (sharedBytes + facts.sharedSizeBytes + reserved);
    const std::size_t percent = std::min<std::size_t>(100, (100 * need + most - 1) / most);
    it = f.carveoutFor.emplace(asked, static_cast<int>(percent)).first;
  }
  setCarveout(f, device, kernel, it->second);
}

void allowSharedOnce(int device, const char* function, const void* kernel, std::size_t bytes) {
  KernelFacts& f = kernelFacts();
  const auto key = std::make_pair(device, kernel);
  // Held across the setting too: CUDA keeps the last value set, so two host threads allowing 60
  // and 100 KiB must not leave 60 set where 100 is recorded.
  std::lock_guard<std::mutex> g(f.lock);
  std::size_t& allowed = f.sharedAllowed[key];
  if (allowed >= bytes) return;
  useDevice(device, function);
  cudaCheck(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)), function);
  allowed = bytes;
}

// ---- the device error flag ----------------------------------------------------------------------------

namespace {
struct ErrorRecords {
  std::mutex lock;
  DeviceError* slot[kMaxDevices] = {};
  std::atomic<bool> armed[kMaxDevices] = {};  // a checking kernel has run there: look at the record
};
ErrorRecords& errorRecords() {
  static ErrorRecords* r = new ErrorRecords;  // never destroyed: tensors may be read back at exit
  return *r;
}

/// Reads the device's record (the stream is synchronised by the caller); a failure becomes
/// gizml::Error, and the record is cleared for the next one.
void checkDeviceErrors(int device) {
  ErrorRecords& r = errorRecords();
  if (device < 0 || device >= kMaxDevices || !r.armed[device].load()) return;
  DeviceError record;
  cudaCheck(cudaMemcpy(&record, r.slot[device], sizeof record, cudaMemcpyDeviceToHost), "gizml: the device error flag");
  if (record.code == 0) return;
  cudaCheck(cudaMemset(r.slot[device], 0, sizeof record), "gizml: the device error flag");
  throwDeviceError(record);
}

bool syncEachLaunch() {
  static const bool on = [] {
    const char* v = std::getenv("GIZML_CUDA_SYNC");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}
}  // namespace

ErrorFlag errorFlag(int device, unsigned launch) {
  if (device < 0 || device >= kMaxDevices)
    throw Error("gizml: GPU " + std::to_string(device) + " is beyond the 64 that gizml tracks");
  ErrorRecords& r = errorRecords();
  std::lock_guard<std::mutex> g(r.lock);
  if (!r.slot[device]) {
    void* p = nullptr;
    cudaCheck(cudaMalloc(&p, sizeof(DeviceError)), "gizml: the device error flag (cudaMalloc)");
    cudaCheck(cudaMemset(p, 0, sizeof(DeviceError)), "gizml: the device error flag (cudaMemset)");
    r.slot[device] = static_cast<DeviceError*>(p);
  }
  r.armed[device].store(true);
  return ErrorFlag{r.slot[device], launch};
}

void afterLaunch(const Gpu& g, const char* function) {
  cudaCheck(cudaGetLastError(), function);
  if (!syncEachLaunch()) return;
  cudaCheck(cudaStreamSynchronize(streamOf(g)), function);
  checkDeviceErrors(g.device.index);
}

// ---- copies and synchronisation ----------------------------------------------------------------------

void cudaCopy(void* dst, Device dstDevice, const void* src, Device srcDevice, std::size_t bytes) {
  int device = dstDevice.isCuda() ? dstDevice.index : srcDevice.index;
  cudaCheck(cudaSetDevice(device), "gizml::Tensor copy (cudaSetDevice)");
  cudaCheck(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "gizml::Tensor copy (cudaMemcpy)");
  if (dstDevice.isHost()) checkDeviceErrors(srcDevice.index);  // a result read back
}

void cudaUploadAsync(const Gpu& g, void* dst, const void* src, std::size_t bytes) {
  useDevice(g.device.index, "gizml: an upload (cudaSetDevice)");
  cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, streamOf(g)), "gizml: an upload (cudaMemcpyAsync)");
}

void cudaZero(int device, void* p, std::size_t bytes) {
  cudaCheck(cudaSetDevice(device), "gizml::Tensor::zeros (cudaSetDevice)");
  cudaCheck(cudaMemset(p, 0, bytes), "gizml::Tensor::zeros (cudaMemset)");
}

void cudaFillBytes(int device, void* p, std::size_t bytes, int value) {
  cudaCheck(cudaSetDevice(device), "gizml::Tensor::empty (cudaSetDevice)");
  cudaCheck(cudaMemset(p, value, bytes), "gizml::Tensor::empty (cudaMemset)");
}

void cudaSynchronize(const Gpu& g) {
  useDevice(g.device.index, "gizml::Gpu::synchronize (cudaSetDevice)");
  cudaCheck(cudaStreamSynchronize(streamOf(g)), "gizml::Gpu::synchronize");
  checkDeviceErrors(g.device.index);
}

// ---- kernels of the core ---------------------------------------------------------------------------------

namespace {

struct FillArgs {
  exact::Draw draw;
  std::uint32_t k0, k1;
  std::int64_t n;
  float* out;
};

// One thread a Philox counter: the elements 4 g .. 4 g + 3.
__global__ void fillKernel(const FillArgs a) {
  const std::int64_t g = globalThread();
  if (4 * g < a.n) exact::fillDrawGroup(a.draw, a.k0, a.k1, static_cast<std::uint64_t>(g), a.out, a.n);
}

void fill(const Gpu& g, exact::Draw draw, float* out, std::int64_t n, Key key, const char* function) {
  if (n == 0) return;
  launch(g, function, fillKernel, Grid::forItems((n + 3) / 4), FillArgs{draw, key.k0, key.k1, n, out});
}

struct GatherArgs {
  const float* src;
  std::int64_t n;
  const float* index;
  std::int64_t count;
  float* out;
};

__global__ void gatherForTestKernel(const GatherArgs a, const ErrorFlag flag) {
  const std::int64_t i = globalThread();
  if (i >= a.count) return;
  const float at = a.index[i];
  // A float index: NaN and values past int64 are out of range too (compared as floats first).
  const bool finite = at >= 0.0f && at < 9.2e18f;
  const long long j = finite ? static_cast<long long>(at) : -1;
  a.out[i] = flag.inRange(0, j, a.n) ? a.src[j] : 0.0f;
}

struct MathArgs {
  MathForTest f;
  std::uint32_t firstBits;
  std::int64_t count;
  float* out;
};

__global__ void mathForTestKernel(const MathArgs a) {
  const std::int64_t i = globalThread();
  if (i >= a.count) return;
  const float x = exact::fromBits(a.firstBits + static_cast<std::uint32_t>(i));
  float y = 0.0f;
  switch (a.f) {
    case MathForTest::Exp: y = exact::exp(x); break;
    case MathForTest::Log: y = exact::log(x); break;
    case MathForTest::Silu: y = exact::silu(x); break;
    case MathForTest::Sigmoid: y = exact::sigmoid(x); break;
    case MathForTest::GeluTanh: y = exact::geluTanh(x); break;
  }
  a.out[i] = y;
}

struct MultiplyAddArgs {
  float a, b, c;
  float* out;
};
__global__ void multiplyAddKernel(const MultiplyAddArgs a) { *a.out = a.a * a.b + a.c; }

}  // namespace

void cudaFillUniform(const Gpu& g, float* out, std::int64_t n, Key key) {
  fill(g, exact::Draw::Uniform, out, n, key, "gizml::Tensor::uniform");
}

void cudaFillNormal(const Gpu& g, float* out, std::int64_t n, Key key) {
  fill(g, exact::Draw::Normal, out, n, key, "gizml::Tensor::normal");
}

void cudaGatherForTest(const Gpu& g, const float* src, std::int64_t n, const float* index, std::int64_t count,
                       float* out) {
  if (count == 0) return;
  launchChecked(g, "gizml::detail::gatherForTest", {"index"}, gatherForTestKernel, Grid::forItems(count),
                GatherArgs{src, n, index, count, out});
}

void cudaMathForTest(const Gpu& g, MathForTest f, std::uint32_t firstBits, std::int64_t count, float* out) {
  if (count == 0) return;
  launch(g, "gizml::detail::mathForTest", mathForTestKernel, Grid::forItems(count), MathArgs{f, firstBits, count, out});
}

float cudaMultiplyAdd(int device, float a, float b, float c) {
  const Gpu g{Device::cuda(device), nullptr};
  float* d = static_cast<float*>(cudaAllocate(device, sizeof(float)));
  float out = 0;
  try {
    launch(g, "gizml::detail::cudaMultiplyAdd", multiplyAddKernel, Grid{1, 1}, MultiplyAddArgs{a, b, c, d});
    cudaCopy(&out, Device::host(), d, Device::cuda(device), sizeof out);
  } catch (...) {
    cudaRelease(device, d);
    throw;
  }
  cudaRelease(device, d);
  return out;
}

}  // namespace gizml::detail

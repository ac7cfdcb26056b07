#include "devices/cuda/cuda_allocator.h"

#include <cuda_runtime.h>

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/cuda/cuda_status.h"
#include "devices/status_macros.h"

namespace devices {
namespace cuda {

CudaAllocator::CudaAllocator(std::string name, int ordinal, int64_t capacity)
    : name_(std::move(name)), ordinal_(ordinal), counter_(capacity) {}

CudaAllocator::~CudaAllocator() { ReleaseCache(); }

size_t CudaAllocator::RoundedSize(size_t bytes) {
  constexpr size_t kMinGranule = 512;
  size_t granule = kMinGranule;
  // The granule is the largest power of two <= bytes / 8, at least 512.
  while (granule <= bytes / 16) granule *= 2;
  if (bytes > std::numeric_limits<size_t>::max() - granule) return bytes;
  return (bytes + granule - 1) / granule * granule;
}

absl::StatusOr<void*> CudaAllocator::Allocate(size_t bytes) {
  if (bytes > static_cast<size_t>(std::numeric_limits<int64_t>::max())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of memory on ", name_, ": cannot allocate ", bytes, " bytes"));
  }
  const int64_t size = static_cast<int64_t>(bytes);
  RETURN_IF_ERROR(counter_.Reserve(size, name_));
  if (bytes == 0) return static_cast<void*>(nullptr);
  const size_t rounded = RoundedSize(bytes);
  {
    absl::MutexLock lock(&mu_);
    auto it = cache_.find(rounded);
    if (it != cache_.end() && !it->second.empty()) {
      void* ptr = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= static_cast<int64_t>(rounded);
      return ptr;
    }
  }
  ScopedCudaDevice on_device(ordinal_);
  if (!on_device.status().ok()) {
    counter_.Release(size);
    return on_device.status();
  }
  void* ptr = nullptr;
  cudaError_t error = cudaMalloc(&ptr, rounded);
  if (error == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // Clears the (non-sticky) error before retrying.
    ReleaseCache();
    error = cudaMalloc(&ptr, rounded);
  }
  if (error != cudaSuccess) {
    if (error == cudaErrorMemoryAllocation) cudaGetLastError();
    counter_.Release(size);
    if (error == cudaErrorMemoryAllocation) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "out of memory on ", name_, ": cudaMalloc of ", rounded,
          " bytes failed with ", bytes_in_use(),
          " bytes in use by tensors; free tensors or use a smaller batch"));
    }
    return CudaStatus(
        error, absl::StrCat("cudaMalloc(", rounded, " bytes) on ", name_));
  }
  return ptr;
}

void CudaAllocator::Deallocate(void* ptr, size_t bytes) {
  counter_.Release(static_cast<int64_t>(bytes));
  if (ptr == nullptr) return;
  const size_t rounded = RoundedSize(bytes);
  absl::MutexLock lock(&mu_);
  cache_[rounded].push_back(ptr);
  cached_bytes_ += static_cast<int64_t>(rounded);
}

int64_t CudaAllocator::cached_bytes() const {
  absl::MutexLock lock(&mu_);
  return cached_bytes_;
}

void CudaAllocator::ReleaseCache() {
  std::vector<void*> blocks;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [size, list] : cache_) {
      blocks.insert(blocks.end(), list.begin(), list.end());
    }
    cache_.clear();
    cached_bytes_ = 0;
  }
  FreeBlocks(blocks);
}

void CudaAllocator::FreeBlocks(const std::vector<void*>& blocks) {
  if (blocks.empty()) return;
  ScopedCudaDevice on_device(ordinal_);
  // cudaFree waits for the device's work, which may still read the blocks.
  for (void* ptr : blocks) cudaFree(ptr);
}

}  // namespace cuda
}  // namespace devices

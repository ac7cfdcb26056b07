#include "devices/allocator.h"

#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"

namespace devices {

absl::Status MemoryCounter::Reserve(int64_t bytes, const std::string& owner) {
  int64_t current = in_use_.load(std::memory_order_relaxed);
  while (true) {
    if (bytes > capacity_ - current) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "out of memory on ", owner, ": allocating ", bytes, " bytes with ",
          current, " of ", capacity_,
          " bytes in use; free tensors, use a smaller batch or a device with "
          "more memory"));
    }
    if (in_use_.compare_exchange_weak(current, current + bytes,
                                      std::memory_order_relaxed)) {
      break;
    }
  }
  const int64_t now = current + bytes;
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return absl::OkStatus();
}

void MemoryCounter::Release(int64_t bytes) {
  in_use_.fetch_sub(bytes, std::memory_order_relaxed);
}

HostAllocator::HostAllocator(std::string name, int64_t capacity)
    : name_(std::move(name)), counter_(capacity) {}

absl::StatusOr<void*> HostAllocator::Allocate(size_t bytes) {
  if (bytes > static_cast<size_t>(std::numeric_limits<int64_t>::max())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of memory on ", name_, ": cannot allocate ", bytes, " bytes"));
  }
  const int64_t size = static_cast<int64_t>(bytes);
  RETURN_IF_ERROR(counter_.Reserve(size, name_));
  // aligned_alloc needs a size that is a multiple of the alignment, and a
  // non-zero size gives every allocation a distinct address.
  const size_t rounded = bytes == 0 ? kTensorAlignment
                                    : (bytes + kTensorAlignment - 1) /
                                          kTensorAlignment * kTensorAlignment;
  void* ptr =
      rounded < bytes ? nullptr : std::aligned_alloc(kTensorAlignment, rounded);
  if (ptr == nullptr) {
    counter_.Release(size);
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory on ", name_, ": the host heap could not ",
                     "provide ", bytes, " bytes"));
  }
  return ptr;
}

void HostAllocator::Deallocate(void* ptr, size_t bytes) {
  std::free(ptr);
  counter_.Release(static_cast<int64_t>(bytes));
}

AccountingAllocator::AccountingAllocator(std::string name, int64_t capacity)
    : name_(std::move(name)), counter_(capacity) {}

absl::StatusOr<void*> AccountingAllocator::Allocate(size_t bytes) {
  if (bytes > static_cast<size_t>(std::numeric_limits<int64_t>::max())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of memory on ", name_, ": cannot allocate ", bytes, " bytes"));
  }
  RETURN_IF_ERROR(counter_.Reserve(static_cast<int64_t>(bytes), name_));
  return static_cast<void*>(nullptr);
}

void AccountingAllocator::Deallocate(void* /*ptr*/, size_t bytes) {
  counter_.Release(static_cast<int64_t>(bytes));
}

std::shared_ptr<Allocator> HostHeapAllocator() {
  // Leaked on purpose: tensors may outlive static destruction order.
  static auto* const heap =
      new std::shared_ptr<Allocator>(std::make_shared<HostAllocator>(
          "host", std::numeric_limits<int64_t>::max()));
  return *heap;
}

}  // namespace devices

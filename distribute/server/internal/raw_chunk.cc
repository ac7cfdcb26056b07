#include "distribute/server/internal/raw_chunk.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#ifdef DISTSIM_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace distribute {
namespace server_internal {
namespace {

// Reads bytes across the slices of a received buffer.
class SliceCursor {
 public:
  explicit SliceCursor(const std::vector<grpc::Slice>& slices)
      : slices_(slices) {}

  bool ReadByte(uint8_t& byte) {
    Settle();
    if (index_ == slices_.size()) return false;
    byte = slices_[index_].begin()[offset_++];
    return true;
  }
  bool ReadVarint(uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t byte = 0;
      if (!ReadByte(byte)) return false;
      value |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80u) == 0) return true;
    }
    return false;
  }
  bool Read(size_t n, std::string& out) {
    out.clear();
    while (n > 0) {
      Settle();
      if (index_ == slices_.size()) return false;
      const size_t take = std::min(n, slices_[index_].size() - offset_);
      out.append(
          reinterpret_cast<const char*>(slices_[index_].begin()) + offset_,
          take);
      offset_ += take;
      n -= take;
    }
    return true;
  }
  // The rest, as pieces.
  void Rest(std::vector<absl::string_view>& pieces, size_t& size) {
    pieces.clear();
    size = 0;
    for (; index_ < slices_.size(); ++index_, offset_ = 0) {
      const size_t n = slices_[index_].size() - offset_;
      if (n == 0) continue;
      pieces.emplace_back(
          reinterpret_cast<const char*>(slices_[index_].begin()) + offset_, n);
      size += n;
    }
  }

 private:
  void Settle() {
    while (index_ < slices_.size() && offset_ == slices_[index_].size()) {
      ++index_;
      offset_ = 0;
    }
  }

  const std::vector<grpc::Slice>& slices_;
  size_t index_ = 0;
  size_t offset_ = 0;
};

}  // namespace

struct PayloadPins::State {
  absl::Mutex mu;
  int64_t count ABSL_GUARDED_BY(mu) = 0;
};

// One pinned slice; owned by gRPC's slice until Release, which may run on
// a gRPC thread. gRPC's slice refcount orders Pin before Release, but it is
// not visible to ThreadSanitizer (the system gRPC is not instrumented), so
// `pinned` carries the same order in the project's own code.
struct PayloadPins::Ref {
  explicit Ref(std::shared_ptr<State> s) : state(std::move(s)) {
    pinned.store(true, std::memory_order_release);
  }
  std::shared_ptr<State> state;
  std::atomic<bool> pinned{false};
};

PayloadPins::PayloadPins() : state_(std::make_shared<State>()) {}

grpc::Slice PayloadPins::Pin(const std::byte* data, size_t size) {
  {
    absl::MutexLock lock(&state_->mu);
    ++state_->count;
  }
  // gRPC never writes through the pointer; its API only takes it non-const.
  return grpc::Slice(const_cast<std::byte*>(data), size, &PayloadPins::Release,
                     new Ref(state_));
}

void PayloadPins::Release(void* ref) {
  std::unique_ptr<Ref> owned(static_cast<Ref*>(ref));
  (void)owned->pinned.load(std::memory_order_acquire);
  absl::MutexLock lock(&owned->state->mu);
  --owned->state->count;
}

void PayloadPins::WaitUntilReleased() {
  absl::MutexLock lock(&state_->mu);
  state_->mu.Await(absl::Condition(
      +[](State* state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) {
        return state->count == 0;
      },
      state_.get()));
}

// The slices gRPC reads from one socket share its read buffers: a chunk's
// slice can hold the bytes of other streams' chunks too, which other
// handler threads copy out, and whichever thread drops the last reference
// frees the buffer. gRPC's reference count orders every earlier use
// before that free, but it is not visible to ThreadSanitizer (the system
// gRPC is not instrumented), so under --config=tsan each drop of a slice
// by the project's code releases and acquires on the slice's reference
// count, as the atomic decrement inside gRPC does.
void InboundChunk::DropSlices() {
#ifdef DISTSIM_TSAN
  for (grpc::Slice& slice : slices) {
    void* count = slice.c_slice().refcount;
    if (count == nullptr) continue;  // Inlined bytes: nothing shared.
    __tsan_release(count);
    __tsan_acquire(count);
  }
#endif
  pieces.clear();
  slices.clear();
  size = 0;
}

InboundChunk::~InboundChunk() { DropSlices(); }

void OutboundChunk::Set(const server::DeliverChunk& meta,
                        const std::byte* payload, size_t payload_size) {
  const std::string body = meta.SerializeAsString();
  prefix.clear();
  uint64_t length = body.size();
  do {
    uint8_t byte = length & 0x7fu;
    length >>= 7;
    if (length != 0) byte |= 0x80u;
    prefix.push_back(static_cast<char>(byte));
  } while (length != 0);
  prefix += body;
  data = payload;
  size = payload_size;
}

}  // namespace server_internal
}  // namespace distribute

namespace grpc {

Status SerializationTraits<distribute::server_internal::OutboundChunk, void>::
    Serialize(const distribute::server_internal::OutboundChunk& m,
              ByteBuffer* buffer, bool* own_buffer) {
  Slice slices[2] = {Slice(m.prefix),
                     m.pins != nullptr
                         ? m.pins->Pin(m.data, m.size)
                         : Slice(m.data, m.size, Slice::STATIC_SLICE)};
  ByteBuffer result(slices, m.size > 0 ? 2 : 1);
  buffer->Swap(&result);
  *own_buffer = true;
  return Status::OK;
}

Status SerializationTraits<distribute::server_internal::InboundChunk, void>::
    Deserialize(ByteBuffer* buffer,
                distribute::server_internal::InboundChunk* m) {
  ByteBuffer owned;
  owned.Swap(buffer);  // Ours now; freed when `owned` goes.
  (void)m->handed_back.load(std::memory_order_acquire);
  m->DropSlices();
  if (!owned.Valid() || !owned.Dump(&m->slices).ok()) {
    return Status(StatusCode::INTERNAL, "a transport chunk could not be read");
  }
  distribute::server_internal::SliceCursor cursor(m->slices);
  uint64_t length = 0;
  std::string body;
  if (!cursor.ReadVarint(length) || length > (uint64_t{1} << 20) ||
      !cursor.Read(static_cast<size_t>(length), body) ||
      !m->meta.ParseFromString(body) || !m->meta.data().empty()) {
    return Status(StatusCode::INTERNAL,
                  "a transport chunk has a malformed prefix");
  }
  cursor.Rest(m->pieces, m->size);
  return Status::OK;
}

}  // namespace grpc

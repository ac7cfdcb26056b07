// All-reduce for ranks that share one address space (host threads; a
// Transport whose direct_access() is non-null): each rank publishes its
// buffer pointers and reads its peers' buffers directly, synchronised by the
// group's barrier (devices/direct_access.h), instead of exchanging messages.
//
//  * one-shot (small messages): each rank copies its input into a staging
//    buffer of its own (two, used alternately), behind a header line with
//    its count, dtype and op, arrives once, and reduces every rank's staged
//    copy into its output. One barrier per call, and one run of cache lines
//    read from each peer after it.
//  * two-shot (large messages): reduce-scatter, in which rank r reduces
//    slice r straight from all inputs in cache-sized blocks into its output,
//    then all-gather, in which each rank copies the other slices from their
//    owners' outputs. Three barriers per call (pointers published, slices
//    reduced, slices copied).
//
// Both reduce every element in rank order, ((x0 op x1) op x2) ..., with
// devices::Accumulate (16-bit floats widened to float32 and rounded back
// at each step), and divide by the group size once for kMean: exactly what
// the "direct" schedule (BuildDirectAllReduce) computes on any transport,
// so results are bit-identical to it and deterministic run to run.
//
// Example (n ranks, each in its own thread):
//   SharedMemoryAllReduce all_reduce(*transport->direct_access(), {});
//   absl::Status s = all_reduce.Run(rank, in, out, count, DType::kFloat32,
//                                   ReduceOp::kSum, absl::Seconds(30));
#ifndef DISTRIBUTE_COLLECTIVE_SHARED_MEMORY_ALL_REDUCE_H_
#define DISTRIBUTE_COLLECTIVE_SHARED_MEMORY_ALL_REDUCE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "devices/direct_access.h"
#include "devices/dtype.h"
#include "devices/reduce_op.h"

namespace distribute {
namespace collective {

struct SharedMemoryAllReduceOptions {
  // Messages of at most this many bytes take the one-shot variant; < 0: the
  // default, kDefaultOneShotBytes.
  int64_t one_shot_max_bytes = -1;
  // Reductions work in blocks of this many bytes, which stay in L1/L2
  // cache while every rank's contribution is added in.
  int64_t block_bytes = int64_t{16} << 10;
};

// One-shot moves n times the bytes of two-shot per rank but synchronises
// once instead of three times; below a few tens of KiB the barriers cost
// more than the extra bytes. (Not tuned beyond that reasoning: at 16 and
// 64 KiB //tools/bench:host_collectives shows both sides of it.)
inline constexpr int64_t kDefaultOneShotBytes = int64_t{32} << 10;

class SharedMemoryAllReduce {
 public:
  // `group` must outlive this object and have the communicator's size.
  SharedMemoryAllReduce(devices::DirectAccessGroup& group,
                        SharedMemoryAllReduceOptions options);
  SharedMemoryAllReduce(const SharedMemoryAllReduce&) = delete;
  SharedMemoryAllReduce& operator=(const SharedMemoryAllReduce&) = delete;

  int size() const { return size_; }

  // Whether a message of `bytes` takes the one-shot variant.
  bool OneShot(int64_t bytes) const;

  // All-reduces `count` elements of `dtype`: output = op over the ranks'
  // inputs. Every rank calls it (each from its own thread, one call at a
  // time per rank) with the same count, dtype and op; input and output may
  // be the same buffer but must not partly overlap, and no two ranks may
  // share a buffer. Errors: INVALID_ARGUMENT for a bad rank, a negative
  // count, null buffers, kMean on bool, or ranks that disagree on count,
  // dtype or op (every rank gets it); DEADLINE_EXCEEDED when a peer does
  // not arrive within `timeout`; UNAVAILABLE when the group is aborted.
  // After DEADLINE_EXCEEDED or UNAVAILABLE the group is aborted for good.
  absl::Status Run(int rank, const void* input, void* output, int64_t count,
                   devices::DType dtype, devices::ReduceOp op,
                   absl::Duration timeout);

 private:
  // What a rank publishes for one call (before its first Arrive).
  struct Published {
    int64_t count = 0;
    devices::DType dtype = devices::DType::kFloat32;
    devices::ReduceOp op = devices::ReduceOp::kSum;
    const std::byte* input = nullptr;
    std::byte* output = nullptr;
  };
  // One-shot: a staging buffer starts with what its owner passed, and its
  // data follows on the next cache line.
  struct StagingHeader {
    uint64_t call;  // The owner's RankState::calls for this call.
    int64_t count;
    devices::DType dtype;
    devices::ReduceOp op;
  };
  static constexpr size_t kStagingHeaderBytes = 64;
  static_assert(sizeof(StagingHeader) <= kStagingHeaderBytes);
  struct alignas(64) StagingLine {
    std::byte bytes[64];
  };
  // One rank's state, on cache lines of its own. `published` is indexed by
  // the parity of the call: a peer may still read call g's entry while
  // this rank, one barrier ahead, fills in call g + 1's.
  struct alignas(64) RankState {
    Published published[2];
    // Only the rank's own thread touches calls, staging_bytes and block.
    uint64_t calls = 0;
    // One-shot staging, per parity: header and data (staging_bytes long).
    // Written (and reallocated) by the owner before it arrives; peers read
    // it after that barrier, and the owner touches this parity again only
    // after the next barrier, which they reach once done reading.
    std::unique_ptr<StagingLine[]> staging[2];
    size_t staging_bytes[2] = {0, 0};
    std::unique_ptr<std::byte[]> block;  // block_bytes_ of accumulator.
  };

  // INVALID_ARGUMENT if a peer published a different count, dtype or op.
  absl::Status CheckAgreement(int rank, int parity) const;
  static absl::Status Disagreement(int rank, int q, int64_t count,
                                   devices::DType dtype, devices::ReduceOp op,
                                   const Published& mine);
  // out[begin, end) = op over the given per-rank sources, in rank order,
  // block by block (plus the mean's division).
  absl::Status ReduceRange(int rank, absl::Span<const std::byte* const> src,
                           std::byte* out, int64_t begin, int64_t end,
                           const Published& p);
  absl::Status OneShotRun(int rank, int parity,
                          devices::LazyDeadline& deadline);
  absl::Status TwoShotRun(int rank, int parity,
                          devices::LazyDeadline& deadline);

  devices::DirectAccessGroup& group_;
  const int size_;
  const int64_t one_shot_max_bytes_;
  const int64_t block_bytes_;
  std::vector<std::unique_ptr<RankState>> ranks_;
};

}  // namespace collective
}  // namespace distribute

#endif  // DISTRIBUTE_COLLECTIVE_SHARED_MEMORY_ALL_REDUCE_H_

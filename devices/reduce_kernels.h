// Host reduction kernels for collectives: combine buffers elementwise with a
// ReduceOp. Accumulate is the pairwise step collective algorithms use
// (dst = dst op src on raw buffers); MEAN accumulates as SUM and is finished
// by one FinalizeMean. ReduceInto reduces whole tensors. Every dtype is
// supported: 16-bit floats are widened to float32 for each pairwise step and
// rounded back once per step; integers wrap around on overflow; bool SUM and
// MAX are logical or, PROD and MIN logical and (MEAN is undefined for bool).
// MIN and MAX propagate NaN. Each kernel returns its KernelCost.
//
// Example (the reduction step of a ring all-reduce, then the mean):
//   absl::StatusOr<devices::KernelCost> cost = devices::Accumulate(
//       ReduceOp::kMean, received.data(), chunk, count, DType::kFloat32);
//   ...after all steps...
//   devices::FinalizeMean(chunk, count, DType::kFloat32, num_ranks);
#ifndef DEVICES_REDUCE_KERNELS_H_
#define DEVICES_REDUCE_KERNELS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "devices/dtype.h"
#include "devices/kernel_costs.h"
#include "devices/reduce_op.h"
#include "devices/tensor.h"

namespace devices {

// dst[i] = dst[i] op src[i] for i < count (kMean acts as kSum). src may equal
// dst. The buffers may sit at any byte offset (misaligned ones are reduced
// through aligned copies). INVALID_ARGUMENT for a negative count, a null buffer with count > 0,
// or kMean on bool.
absl::StatusOr<KernelCost> Accumulate(ReduceOp op, const void* src, void* dst,
                                      int64_t count, DType dtype);

// data[i] /= divisor: finishes a kMean accumulated as a sum of `divisor`
// contributions. Integers divide truncating toward zero. INVALID_ARGUMENT
// for divisor < 1, a negative count, a null buffer, or bool.
absl::StatusOr<KernelCost> FinalizeMean(void* data, int64_t count, DType dtype,
                                        int64_t divisor);

// out = inputs[0] op inputs[1] op ... (pairwise, in input order; kMean
// divides by inputs.size() at the end). out may be one of the inputs; the
// reduction then starts from that input and goes on in order.
// INVALID_ARGUMENT if inputs is empty or a tensor's dtype or shape differs
// from out's; FAILED_PRECONDITION for tensors without host data.
absl::StatusOr<KernelCost> ReduceInto(ReduceOp op,
                                      absl::Span<const Tensor> inputs,
                                      Tensor& out);

}  // namespace devices

#endif  // DEVICES_REDUCE_KERNELS_H_

// The NCCL calls this package makes, behind a raw interface compiled by
// nvcc (nccl_api.cu). Host-compiled code never includes nccl.h, which pulls
// in CUDA's extensionless <nv/target> headers that Bazel's
// @local_config_cuda//:cuda_headers does not export. NCCL's communicator
// type is used, forward-declared; results are ncclResult_t values as ints;
// dtypes and reduce ops are the codes of kernel_math.h (devices::DType and
// devices::ReduceOp values), mapped to NCCL's here:
//   float32/float64/float16/bfloat16/int32/int64/uint8 -> the NCCL type of
//   the same name (ncclFloat16, ncclBfloat16, ...), bool -> ncclUint8;
//   SUM/PROD/MIN/MAX -> ncclSum/ncclProd/ncclMin/ncclMax, MEAN -> ncclAvg;
//   for bool, SUM and MAX -> ncclMax (logical or on 0/1 bytes), PROD and MIN
//   -> ncclMin (logical and); MEAN on bool has no mapping.
//
// Example:
//   char id[devices::cuda::kNcclUniqueIdBytes];
//   int result = devices::cuda::NcclGetUniqueId(id);
//   if (result != devices::cuda::kNcclSuccess) {
//     std::string why = devices::cuda::NcclErrorString(result);
//   }
#ifndef DEVICES_CUDA_NCCL_API_H_
#define DEVICES_CUDA_NCCL_API_H_

#include <cuda_runtime.h>

#include <cstddef>

// NCCL's communicator is a pointer to this (ncclComm_t).
struct ncclComm;

namespace devices {
namespace cuda {

// ncclResult_t values.
inline constexpr int kNcclSuccess = 0;
inline constexpr int kNcclUnhandledCudaError = 1;
inline constexpr int kNcclSystemError = 2;
inline constexpr int kNcclInternalError = 3;
inline constexpr int kNcclInvalidArgument = 4;
inline constexpr int kNcclInvalidUsage = 5;
inline constexpr int kNcclRemoteError = 6;
inline constexpr int kNcclInProgress = 7;

// The size of an ncclUniqueId.
inline constexpr int kNcclUniqueIdBytes = 128;

// NCCL_VERSION_CODE of the library linked in (e.g. 22809 for 2.28.9).
int NcclVersion();

// The ncclDataType_t / ncclRedOp_t for a dtype code (and reduce op code), or
// -1 where there is none.
int NcclDataTypeOf(int dtype);
int NcclRedOpOf(int dtype, int op);

// Writes a fresh ncclUniqueId to `id` (kNcclUniqueIdBytes bytes).
int NcclGetUniqueId(char* id);
// ncclCommInitRankConfig with a non-blocking configuration, on the current
// device: returns at once (kNcclInProgress while the ranks connect; poll
// NcclCommGetAsyncError). `id` holds kNcclUniqueIdBytes bytes.
int NcclCommInitRankNonBlocking(ncclComm** comm, int nranks, const char* id,
                                int rank);
int NcclCommGetAsyncError(ncclComm* comm, int* async_error);
int NcclCommFinalize(ncclComm* comm);
int NcclCommDestroy(ncclComm* comm);
int NcclCommAbort(ncclComm* comm);
// ncclGetErrorString / ncclGetLastError (comm may be null).
const char* NcclErrorString(int result);
const char* NcclLastError(ncclComm* comm);

int NcclGroupStart();
int NcclGroupEnd();

// The collectives, with kernel_math.h codes; kNcclInvalidArgument where
// the dtype (or the dtype and op) has no NCCL mapping.
int NcclAllReduce(const void* send, void* recv, size_t count, int dtype, int op,
                  ncclComm* comm, cudaStream_t stream);
int NcclReduce(const void* send, void* recv, size_t count, int dtype, int op,
               int root, ncclComm* comm, cudaStream_t stream);
int NcclBroadcast(const void* send, void* recv, size_t count, int dtype,
                  int root, ncclComm* comm, cudaStream_t stream);
int NcclAllGather(const void* send, void* recv, size_t send_count, int dtype,
                  ncclComm* comm, cudaStream_t stream);
int NcclReduceScatter(const void* send, void* recv, size_t recv_count,
                      int dtype, int op, ncclComm* comm, cudaStream_t stream);
int NcclSend(const void* send, size_t count, int dtype, int peer,
             ncclComm* comm, cudaStream_t stream);
int NcclRecv(void* recv, size_t count, int dtype, int peer, ncclComm* comm,
             cudaStream_t stream);

}  // namespace cuda
}  // namespace devices

#endif  // DEVICES_CUDA_NCCL_API_H_

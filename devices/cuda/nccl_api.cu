// NCCL behind the raw interface of nccl_api.h (host code only; nvcc
// compiles it so that nccl.h is read from the CUDA installation).
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>

#include "devices/cuda/kernel_math.h"
#include "devices/cuda/nccl_api.h"

namespace devices {
namespace cuda {

static_assert(kNcclSuccess == ncclSuccess);
static_assert(kNcclUnhandledCudaError == ncclUnhandledCudaError);
static_assert(kNcclSystemError == ncclSystemError);
static_assert(kNcclInternalError == ncclInternalError);
static_assert(kNcclInvalidArgument == ncclInvalidArgument);
static_assert(kNcclInvalidUsage == ncclInvalidUsage);
static_assert(kNcclRemoteError == ncclRemoteError);
static_assert(kNcclInProgress == ncclInProgress);
static_assert(kNcclUniqueIdBytes == sizeof(ncclUniqueId));

int NcclVersion() {
  int version = 0;
  ncclGetVersion(&version);
  return version;
}

int NcclDataTypeOf(int dtype) {
  switch (dtype) {
    case math::kFloat32:
      return ncclFloat32;
    case math::kFloat64:
      return ncclFloat64;
    case math::kFloat16:
      return ncclFloat16;
    case math::kBFloat16:
      return ncclBfloat16;
    case math::kInt32:
      return ncclInt32;
    case math::kInt64:
      return ncclInt64;
    case math::kUInt8:
    case math::kBool:
      return ncclUint8;
    default:
      return -1;
  }
}

int NcclRedOpOf(int dtype, int op) {
  if (dtype == math::kBool) {
    switch (op) {
      case math::kSum:
      case math::kMax:
        return ncclMax;
      case math::kProd:
      case math::kMin:
        return ncclMin;
      default:
        return -1;
    }
  }
  switch (op) {
    case math::kSum:
      return ncclSum;
    case math::kProd:
      return ncclProd;
    case math::kMin:
      return ncclMin;
    case math::kMax:
      return ncclMax;
    case math::kMean:
      return ncclAvg;
    default:
      return -1;
  }
}

int NcclGetUniqueId(char* id) {
  ncclUniqueId unique_id;
  const ncclResult_t result = ncclGetUniqueId(&unique_id);
  if (result == ncclSuccess) std::memcpy(id, &unique_id, sizeof(unique_id));
  return result;
}

int NcclCommInitRankNonBlocking(ncclComm** comm, int nranks, const char* id,
                                int rank) {
  ncclUniqueId unique_id;
  std::memcpy(&unique_id, id, sizeof(unique_id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return ncclCommInitRankConfig(comm, nranks, unique_id, rank, &config);
}

int NcclCommGetAsyncError(ncclComm* comm, int* async_error) {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t result = ncclCommGetAsyncError(comm, &state);
  *async_error = state;
  return result;
}

int NcclCommFinalize(ncclComm* comm) { return ncclCommFinalize(comm); }
int NcclCommDestroy(ncclComm* comm) { return ncclCommDestroy(comm); }
int NcclCommAbort(ncclComm* comm) { return ncclCommAbort(comm); }

const char* NcclErrorString(int result) {
  return ncclGetErrorString(static_cast<ncclResult_t>(result));
}

const char* NcclLastError(ncclComm* comm) { return ncclGetLastError(comm); }

int NcclGroupStart() { return ncclGroupStart(); }
int NcclGroupEnd() { return ncclGroupEnd(); }

int NcclAllReduce(const void* send, void* recv, size_t count, int dtype, int op,
                  ncclComm* comm, cudaStream_t stream) {
  const int type = NcclDataTypeOf(dtype);
  const int red = NcclRedOpOf(dtype, op);
  if (type < 0 || red < 0) return ncclInvalidArgument;
  return ncclAllReduce(send, recv, count, static_cast<ncclDataType_t>(type),
                       static_cast<ncclRedOp_t>(red), comm, stream);
}

int NcclReduce(const void* send, void* recv, size_t count, int dtype, int op,
               int root, ncclComm* comm, cudaStream_t stream) {
  const int type = NcclDataTypeOf(dtype);
  const int red = NcclRedOpOf(dtype, op);
  if (type < 0 || red < 0) return ncclInvalidArgument;
  return ncclReduce(send, recv, count, static_cast<ncclDataType_t>(type),
                    static_cast<ncclRedOp_t>(red), root, comm, stream);
}

int NcclBroadcast(const void* send, void* recv, size_t count, int dtype,
                  int root, ncclComm* comm, cudaStream_t stream) {
  const int type = NcclDataTypeOf(dtype);
  if (type < 0) return ncclInvalidArgument;
  return ncclBroadcast(send, recv, count, static_cast<ncclDataType_t>(type),
                       root, comm, stream);
}

int NcclAllGather(const void* send, void* recv, size_t send_count, int dtype,
                  ncclComm* comm, cudaStream_t stream) {
  const int type = NcclDataTypeOf(dtype);
  if (type < 0) return ncclInvalidArgument;
  return ncclAllGather(send, recv, send_count,
                       static_cast<ncclDataType_t>(type), comm, stream);
}

int NcclReduceScatter(const void* send, void* recv, size_t recv_count,
                      int dtype, int op, ncclComm* comm, cudaStream_t stream) {
  const int type = NcclDataTypeOf(dtype);
  const int red = NcclRedOpOf(dtype, op);
  if (type < 0 || red < 0) return ncclInvalidArgument;
  return ncclReduceScatter(send, recv, recv_count,
                           static_cast<ncclDataType_t>(type),
                           static_cast<ncclRedOp_t>(red), comm, stream);
}

int NcclSend(const void* send, size_t count, int dtype, int peer,
             ncclComm* comm, cudaStream_t stream) {
  const int type = NcclDataTypeOf(dtype);
  if (type < 0) return ncclInvalidArgument;
  return ncclSend(send, count, static_cast<ncclDataType_t>(type), peer, comm,
                  stream);
}

int NcclRecv(void* recv, size_t count, int dtype, int peer, ncclComm* comm,
             cudaStream_t stream) {
  const int type = NcclDataTypeOf(dtype);
  if (type < 0) return ncclInvalidArgument;
  return ncclRecv(recv, count, static_cast<ncclDataType_t>(type), peer, comm,
                  stream);
}

}  // namespace cuda
}  // namespace devices

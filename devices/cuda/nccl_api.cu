// NCCL behind the raw interface of nccl_api.h (host code only; nvcc
// compiles it so that nccl.h is read from the CUDA installation). NCCL is
// opened with dlopen on the first call (lazy_library.h), so binaries that
// never form an NCCL group never map it.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>

#include "devices/cuda/kernel_math.h"
#include "devices/cuda/lazy_library.h"
#include "devices/cuda/nccl_api.h"

#define DISTSIM_STR2(x) #x
#define DISTSIM_STR(x) DISTSIM_STR2(x)

namespace devices {
namespace cuda {
namespace {

LazyLibrary& Nccl() {
  static LazyLibrary* const library = new LazyLibrary(
      "NCCL", {"libnccl.so." DISTSIM_STR(NCCL_MAJOR), "libnccl.so"});
  return *library;
}

// The NCCL function `symbol`, of type F (taken with decltype, which
// references no symbol: the binary does not link NCCL); null where NCCL
// cannot be loaded.
template <typename F>
F* Resolve(const char* symbol) {
  return reinterpret_cast<F*>(Nccl().Symbol(symbol));
}

// Declares `fn`, the NCCL function `name`, resolved once; returns
// ncclSystemError from the enclosing function where NCCL is missing.
#define DISTSIM_NCCL_FN(fn, name)                         \
  static auto* const fn = Resolve<decltype(name)>(#name); \
  if (fn == nullptr) return ncclSystemError

}  // namespace

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
  static auto* const get = Resolve<decltype(ncclGetVersion)>("ncclGetVersion");
  int version = 0;
  if (get != nullptr) get(&version);
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
  DISTSIM_NCCL_FN(get_unique_id, ncclGetUniqueId);
  ncclUniqueId unique_id;
  const ncclResult_t result = get_unique_id(&unique_id);
  if (result == ncclSuccess) std::memcpy(id, &unique_id, sizeof(unique_id));
  return result;
}

int NcclCommInitRankNonBlocking(ncclComm** comm, int nranks, const char* id,
                                int rank) {
  DISTSIM_NCCL_FN(init, ncclCommInitRankConfig);
  ncclUniqueId unique_id;
  std::memcpy(&unique_id, id, sizeof(unique_id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return init(comm, nranks, unique_id, rank, &config);
}

int NcclCommGetAsyncError(ncclComm* comm, int* async_error) {
  DISTSIM_NCCL_FN(get_error, ncclCommGetAsyncError);
  ncclResult_t state = ncclSuccess;
  const ncclResult_t result = get_error(comm, &state);
  *async_error = state;
  return result;
}

int NcclCommFinalize(ncclComm* comm) {
  DISTSIM_NCCL_FN(finalize, ncclCommFinalize);
  return finalize(comm);
}
int NcclCommDestroy(ncclComm* comm) {
  DISTSIM_NCCL_FN(destroy, ncclCommDestroy);
  return destroy(comm);
}
int NcclCommAbort(ncclComm* comm) {
  DISTSIM_NCCL_FN(abort_comm, ncclCommAbort);
  return abort_comm(comm);
}

const char* NcclErrorString(int result) {
  static auto* const text =
      Resolve<decltype(ncclGetErrorString)>("ncclGetErrorString");
  // Without NCCL, why it could not be loaded.
  if (text == nullptr) return Nccl().error();
  return text(static_cast<ncclResult_t>(result));
}

const char* NcclLastError(ncclComm* comm) {
  static auto* const last =
      Resolve<decltype(ncclGetLastError)>("ncclGetLastError");
  if (last == nullptr) return Nccl().error();
  return last(comm);
}

int NcclGroupStart() {
  DISTSIM_NCCL_FN(start, ncclGroupStart);
  return start();
}
int NcclGroupEnd() {
  DISTSIM_NCCL_FN(end, ncclGroupEnd);
  return end();
}

int NcclAllReduce(const void* send, void* recv, size_t count, int dtype, int op,
                  ncclComm* comm, cudaStream_t stream) {
  DISTSIM_NCCL_FN(all_reduce, ncclAllReduce);
  const int type = NcclDataTypeOf(dtype);
  const int red = NcclRedOpOf(dtype, op);
  if (type < 0 || red < 0) return ncclInvalidArgument;
  return all_reduce(send, recv, count, static_cast<ncclDataType_t>(type),
                    static_cast<ncclRedOp_t>(red), comm, stream);
}

int NcclReduce(const void* send, void* recv, size_t count, int dtype, int op,
               int root, ncclComm* comm, cudaStream_t stream) {
  DISTSIM_NCCL_FN(reduce, ncclReduce);
  const int type = NcclDataTypeOf(dtype);
  const int red = NcclRedOpOf(dtype, op);
  if (type < 0 || red < 0) return ncclInvalidArgument;
  return reduce(send, recv, count, static_cast<ncclDataType_t>(type),
                static_cast<ncclRedOp_t>(red), root, comm, stream);
}

int NcclBroadcast(const void* send, void* recv, size_t count, int dtype,
                  int root, ncclComm* comm, cudaStream_t stream) {
  DISTSIM_NCCL_FN(broadcast, ncclBroadcast);
  const int type = NcclDataTypeOf(dtype);
  if (type < 0) return ncclInvalidArgument;
  return broadcast(send, recv, count, static_cast<ncclDataType_t>(type), root,
                   comm, stream);
}

int NcclAllGather(const void* send, void* recv, size_t send_count, int dtype,
                  ncclComm* comm, cudaStream_t stream) {
  DISTSIM_NCCL_FN(all_gather, ncclAllGather);
  const int type = NcclDataTypeOf(dtype);
  if (type < 0) return ncclInvalidArgument;
  return all_gather(send, recv, send_count, static_cast<ncclDataType_t>(type),
                    comm, stream);
}

int NcclReduceScatter(const void* send, void* recv, size_t recv_count,
                      int dtype, int op, ncclComm* comm, cudaStream_t stream) {
  DISTSIM_NCCL_FN(reduce_scatter, ncclReduceScatter);
  const int type = NcclDataTypeOf(dtype);
  const int red = NcclRedOpOf(dtype, op);
  if (type < 0 || red < 0) return ncclInvalidArgument;
  return reduce_scatter(send, recv, recv_count,
                        static_cast<ncclDataType_t>(type),
                        static_cast<ncclRedOp_t>(red), comm, stream);
}

int NcclSend(const void* send, size_t count, int dtype, int peer,
             ncclComm* comm, cudaStream_t stream) {
  DISTSIM_NCCL_FN(send_fn, ncclSend);
  const int type = NcclDataTypeOf(dtype);
  if (type < 0) return ncclInvalidArgument;
  return send_fn(send, count, static_cast<ncclDataType_t>(type), peer, comm,
                 stream);
}

int NcclRecv(void* recv, size_t count, int dtype, int peer, ncclComm* comm,
             cudaStream_t stream) {
  DISTSIM_NCCL_FN(recv_fn, ncclRecv);
  const int type = NcclDataTypeOf(dtype);
  if (type < 0) return ncclInvalidArgument;
  return recv_fn(recv, count, static_cast<ncclDataType_t>(type), peer, comm,
                 stream);
}

}  // namespace cuda
}  // namespace devices

// cuBLAS behind the raw interface of cuda_blas.h (host code only; nvcc
// compiles it so that cublas_v2.h is read from the CUDA installation).
// cuBLAS is opened with dlopen on the first call (lazy_library.h): binaries
// that never multiply on a GPU never map its 600 MB.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "devices/cuda/cuda_blas.h"
#include "devices/cuda/kernel_math.h"
#include "devices/cuda/lazy_library.h"

#define DISTSIM_STR2(x) #x
#define DISTSIM_STR(x) DISTSIM_STR2(x)

namespace devices {
namespace cuda {
namespace {

LazyLibrary& Cublas() {
  static LazyLibrary* const library = new LazyLibrary(
      "cuBLAS",
      {"libcublas.so." DISTSIM_STR(CUBLAS_VER_MAJOR), "libcublas.so"});
  return *library;
}

// The cuBLAS function exported as `symbol` (the name the header's macros
// expand to), of type F (taken with decltype, which references no symbol:
// the binary does not link cuBLAS); null where cuBLAS cannot be loaded.
template <typename F>
F* Resolve(const char* symbol) {
  return reinterpret_cast<F*>(Cublas().Symbol(symbol));
}

}  // namespace

static_assert(kBlasSuccess == CUBLAS_STATUS_SUCCESS);
static_assert(kBlasNotInitialized == CUBLAS_STATUS_NOT_INITIALIZED);
static_assert(kBlasAllocFailed == CUBLAS_STATUS_ALLOC_FAILED);

int BlasCreate(cublasContext** handle, cudaStream_t stream) {
  static auto* const create =
      Resolve<decltype(cublasCreate_v2)>("cublasCreate_v2");
  static auto* const set_stream =
      Resolve<decltype(cublasSetStream_v2)>("cublasSetStream_v2");
  static auto* const destroy =
      Resolve<decltype(cublasDestroy_v2)>("cublasDestroy_v2");
  *handle = nullptr;
  if (create == nullptr || set_stream == nullptr || destroy == nullptr) {
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  cublasHandle_t created = nullptr;
  cublasStatus_t status = create(&created);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  status = set_stream(created, stream);
  if (status != CUBLAS_STATUS_SUCCESS) {
    destroy(created);
    return status;
  }
  *handle = created;
  return CUBLAS_STATUS_SUCCESS;
}

void BlasDestroy(cublasContext* handle) {
  // A handle exists only where cuBLAS was loaded.
  static auto* const destroy =
      Resolve<decltype(cublasDestroy_v2)>("cublasDestroy_v2");
  if (handle != nullptr && destroy != nullptr) destroy(handle);
}

int BlasGemm(cublasContext* handle, int dtype, bool transpose_a,
             bool transpose_b, int m, int n, int k, const void* a, int lda,
             const void* b, int ldb, void* c, int ldc) {
  static auto* const sgemm =
      Resolve<decltype(cublasSgemm_v2)>("cublasSgemm_v2");
  static auto* const dgemm =
      Resolve<decltype(cublasDgemm_v2)>("cublasDgemm_v2");
  // The exported cublasGemmEx (the header overloads it inline for C++).
  using GemmEx =
      cublasStatus_t(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                     int, int, const void*, const void*, cudaDataType, int,
                     const void*, cudaDataType, int, const void*, void*,
                     cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  static auto* const gemm_ex = Resolve<GemmEx>("cublasGemmEx");
  if (sgemm == nullptr || dgemm == nullptr || gemm_ex == nullptr) {
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  const cublasOperation_t op_a = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  switch (dtype) {
    case math::kFloat32: {
      const float alpha = 1;
      const float beta = 0;
      return sgemm(handle, op_a, op_b, m, n, k, &alpha,
                   static_cast<const float*>(a), lda,
                   static_cast<const float*>(b), ldb, &beta,
                   static_cast<float*>(c), ldc);
    }
    case math::kFloat64: {
      const double alpha = 1;
      const double beta = 0;
      return dgemm(handle, op_a, op_b, m, n, k, &alpha,
                   static_cast<const double*>(a), lda,
                   static_cast<const double*>(b), ldb, &beta,
                   static_cast<double*>(c), ldc);
    }
    case math::kFloat16:
    case math::kBFloat16: {
      const cudaDataType_t type =
          dtype == math::kFloat16 ? CUDA_R_16F : CUDA_R_16BF;
      const float alpha = 1;
      const float beta = 0;
      return gemm_ex(handle, op_a, op_b, m, n, k, &alpha, a, type, lda, b, type,
                     ldb, &beta, c, type, ldc, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
    }
    default:
      return CUBLAS_STATUS_INVALID_VALUE;
  }
}

const char* BlasStatusName(int status) {
  static auto* const name =
      Resolve<decltype(cublasGetStatusName)>("cublasGetStatusName");
  if (name == nullptr) return "CUBLAS_STATUS_NOT_INITIALIZED";
  return name(static_cast<cublasStatus_t>(status));
}

const char* BlasStatusString(int status) {
  static auto* const text =
      Resolve<decltype(cublasGetStatusString)>("cublasGetStatusString");
  // Without cuBLAS, why it could not be loaded.
  if (text == nullptr) return Cublas().error();
  if (status == CUBLAS_STATUS_NOT_INITIALIZED && *Cublas().error() != '\0') {
    return Cublas().error();
  }
  return text(static_cast<cublasStatus_t>(status));
}

}  // namespace cuda
}  // namespace devices

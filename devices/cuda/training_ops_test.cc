// The CUDA training kernels, through the GPU's KernelLibrary
// (CudaDevice::kernels()), against the host kernels: bit for bit for
// BiasAdd, BiasAddGrad, RowScale, SGD and Adam (the same operations in the
// same order, no FMA contraction), within 1e-6 relative for AverageLoss
// (its double sum runs in a tree order). Skipped without a GPU.
#include "devices/cuda/training_ops.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/cuda/cuda_test_util.h"
#include "devices/cuda/test_values.h"
#include "devices/kernel_library.h"
#include "devices/kernels.h"
#include "gtest/gtest.h"

namespace devices {
namespace cuda {
namespace {

class CudaTrainingKernelsTest : public GpuTest,
                                public ::testing::WithParamInterface<DType> {
 protected:
  // Seeded uniform values in [low, high) on the host.
  static Tensor Uniform(const Shape& shape, uint64_t seed, double low = -2,
                        double high = 2) {
    Tensor t = *Tensor::Host(GetParam(), shape);
    EXPECT_TRUE(RandomUniform(seed, low, high, t).ok());
    return t;
  }
  void ExpectSameCost(const absl::StatusOr<KernelCost>& got,
                      const absl::StatusOr<KernelCost>& want) {
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_EQ(got->name, want->name);
    EXPECT_EQ(got->flops, want->flops);
    EXPECT_EQ(got->bytes, want->bytes);
  }
};

TEST_P(CudaTrainingKernelsTest, TheGpuHandsOutItsOwnLibrary) {
  const KernelLibrary& k = gpu().kernels();
  EXPECT_NE(&k, &HostKernels());
  EXPECT_EQ(k.memory_space(), MemorySpace::kDevice);
  EXPECT_EQ(std::string(k.name()), "cuda " + gpu().name());
}

TEST_P(CudaTrainingKernelsTest, BiasAddAndItsGradientMatchTheHost) {
  const KernelLibrary& k = gpu().kernels();
  Tensor x = Uniform({37, 19}, 1);
  Tensor bias = Uniform({19}, 2);
  Tensor on_gpu = ToGpu(gpu(), x);
  ExpectSameCost(k.BiasAdd(ToGpu(gpu(), bias), on_gpu), BiasAdd(bias, x));
  EXPECT_EQ(FirstDifference(ToHost(gpu(), on_gpu), x), "");

  Tensor db = *Tensor::Host(GetParam(), {19});
  Tensor db_gpu = *gpu().Allocate(GetParam(), {19});
  ExpectSameCost(k.BiasAddGrad(on_gpu, db_gpu), BiasAddGrad(x, db));
  EXPECT_EQ(FirstDifference(ToHost(gpu(), db_gpu), db), "");
}

TEST_P(CudaTrainingKernelsTest, RowScaleMatchesTheHost) {
  const KernelLibrary& k = gpu().kernels();
  Tensor in = Uniform({33, 10}, 3);
  Tensor w = Uniform({33}, 4, 0, 3);
  Tensor want = *Tensor::Host(GetParam(), in.shape());
  Tensor out = *gpu().Allocate(GetParam(), in.shape());
  ExpectSameCost(k.RowScale(ToGpu(gpu(), in), ToGpu(gpu(), w), 0.3, out),
                 RowScale(in, w, 0.3, want));
  EXPECT_EQ(FirstDifference(ToHost(gpu(), out), want), "");
}

TEST_P(CudaTrainingKernelsTest, AverageLossMatchesTheHostWithinRounding) {
  const KernelLibrary& k = gpu().kernels();
  Tensor loss = Uniform({1000}, 5, 0, 5);
  Tensor weights = Uniform({1000}, 6, 0, 1);
  Tensor scalar = Uniform({1}, 7, 0, 1);
  const std::vector<const Tensor*> all_weights = {nullptr, &weights, &scalar};
  for (const Tensor* weight : all_weights) {
    Tensor want = *Tensor::Host(GetParam(), Shape());
    Tensor out = *gpu().Allocate(GetParam(), Shape());
    Tensor w_gpu = weight == nullptr ? Tensor() : ToGpu(gpu(), *weight);
    ExpectSameCost(
        k.AverageLoss(ToGpu(gpu(), loss), weight == nullptr ? nullptr : &w_gpu,
                      64.0, out),
        AverageLoss(loss, weight, 64.0, want));
    EXPECT_EQ(FirstMismatch(ToHost(gpu(), out), want, 1e-6), "");
  }
  // An empty batch averages to 0, as on the host.
  Tensor none = *gpu().Allocate(GetParam(), {0});
  Tensor out = *gpu().Allocate(GetParam(), Shape());
  ASSERT_TRUE(k.AverageLoss(none, nullptr, 1.0, out).ok());
  Tensor zero = *Tensor::Host(GetParam(), Shape());
  ASSERT_TRUE(Fill(0, zero).ok());
  EXPECT_EQ(FirstDifference(ToHost(gpu(), out), zero), "");
}

TEST_P(CudaTrainingKernelsTest, SgdUpdatesMatchTheHost) {
  const KernelLibrary& k = gpu().kernels();
  for (int variant = 0; variant < 3; ++variant) {
    const double momentum = variant == 0 ? 0.0 : 0.9;
    const bool nesterov = variant == 2;
    Tensor var = Uniform({1001}, 8);
    Tensor grad = Uniform({1001}, 9);
    Tensor m = Uniform({1001}, 10);
    Tensor var_gpu = ToGpu(gpu(), var);
    Tensor m_gpu = ToGpu(gpu(), m);
    ExpectSameCost(
        k.SgdUpdate(var_gpu, ToGpu(gpu(), grad),
                    momentum == 0 ? nullptr : &m_gpu, 0.01, momentum, nesterov),
        SgdUpdate(var, grad, momentum == 0 ? nullptr : &m, 0.01, momentum,
                  nesterov));
    EXPECT_EQ(FirstDifference(ToHost(gpu(), var_gpu), var), "") << variant;
    EXPECT_EQ(FirstDifference(ToHost(gpu(), m_gpu), m), "") << variant;
  }
}

TEST_P(CudaTrainingKernelsTest, AdamUpdateMatchesTheHost) {
  const KernelLibrary& k = gpu().kernels();
  Tensor var = Uniform({999}, 11);
  Tensor grad = Uniform({999}, 12);
  Tensor m = Uniform({999}, 13, -0.1, 0.1);
  Tensor v = Uniform({999}, 14, 0, 0.5);
  Tensor var_gpu = ToGpu(gpu(), var);
  Tensor m_gpu = ToGpu(gpu(), m);
  Tensor v_gpu = ToGpu(gpu(), v);
  for (int step = 0; step < 3; ++step) {
    ExpectSameCost(k.AdamUpdate(var_gpu, ToGpu(gpu(), grad), m_gpu, v_gpu,
                                0.001, 0.9, 0.999, 1e-7),
                   AdamUpdate(var, grad, m, v, 0.001, 0.9, 0.999, 1e-7));
  }
  EXPECT_EQ(FirstDifference(ToHost(gpu(), var_gpu), var), "");
  EXPECT_EQ(FirstDifference(ToHost(gpu(), m_gpu), m), "");
  EXPECT_EQ(FirstDifference(ToHost(gpu(), v_gpu), v), "");
}

TEST_P(CudaTrainingKernelsTest, RejectsWhatTheHostRejectsAndForeignTensors) {
  const KernelLibrary& k = gpu().kernels();
  Tensor x = *gpu().Allocate(GetParam(), {4, 3});
  Tensor wrong_bias = *gpu().Allocate(GetParam(), {4});
  EXPECT_EQ(k.BiasAdd(wrong_bias, x).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A host tensor is not on this GPU.
  Tensor host_bias = Uniform({3}, 15);
  EXPECT_EQ(k.BiasAdd(host_bias, x).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor grad = *gpu().Allocate(GetParam(), {4, 3});
  EXPECT_EQ(k.SgdUpdate(x, grad, nullptr, 0.1, 0.9, false).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor out = *gpu().Allocate(GetParam(), Shape());
  EXPECT_EQ(k.AverageLoss(x, nullptr, 0.0, out).status().code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, CudaTrainingKernelsTest,
                         ::testing::Values(DType::kFloat32, DType::kFloat64),
                         [](const auto& info) {
                           return std::string(DTypeName(info.param));
                         });

}  // namespace
}  // namespace cuda
}  // namespace devices

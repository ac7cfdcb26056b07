// The CUDA kernels against the host kernels, on a real GPU: bit for bit
// where the host and the GPU do the same operations in the same order
// (elementwise, reductions, random numbers), within rounding for MatMul and
// softmax. Skipped without a GPU.
#include "devices/cuda/cuda_kernels.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/cuda/cuda_test_util.h"
#include "devices/cuda/ops.h"
#include "devices/cuda/test_values.h"
#include "devices/kernels.h"
#include "devices/status_macros.h"
#include "gtest/gtest.h"

namespace devices {
namespace cuda {
namespace {

constexpr int64_t kCount = 1000;

class CudaKernelsTest : public GpuTest {};

class CudaDTypeTest : public GpuTest,
                      public ::testing::WithParamInterface<DType> {
 protected:
  // Runs `op` on the GPU's queue and waits for it.
  void RunOnGpu(absl::AnyInvocable<absl::Status()> op) {
    absl::Status s = gpu()
                         .Enqueue(KernelCost{"Test", 0, 0}, std::move(op))
                         ->Wait(absl::Seconds(60));
    ASSERT_TRUE(s.ok()) << s;
  }
};

using HostBinary = absl::StatusOr<KernelCost> (*)(const Tensor&, const Tensor&,
                                                  Tensor&);
using GpuBinary = absl::StatusOr<KernelCost> (*)(CudaDevice&, const Tensor&,
                                                 const Tensor&, Tensor&);

TEST_P(CudaDTypeTest, BinaryOpsMatchTheHost) {
  const DType dtype = GetParam();
  if (dtype == DType::kBool) GTEST_SKIP() << "bool has no arithmetic";
  const HostBinary host_ops[] = {&devices::Add, &devices::Sub, &devices::Mul,
                                 &devices::Div};
  const GpuBinary gpu_ops[] = {&Add, &Sub, &Mul, &Div};
  for (int op = 0; op < 4; ++op) {
    Tensor a = TestValues(dtype, kCount, 1);
    Tensor b = TestValues(dtype, kCount, 2, /*nonzero=*/op == 3);
    Tensor want = *Tensor::Host(dtype, a.shape());
    absl::StatusOr<KernelCost> host_cost = host_ops[op](a, b, want);
    ASSERT_TRUE(host_cost.ok()) << host_cost.status();
    Tensor x = ToGpu(gpu(), a);
    Tensor y = ToGpu(gpu(), b);
    Tensor out = *gpu().Allocate(dtype, a.shape());
    RunOnGpu([&] {
      ASSIGN_OR_RETURN(KernelCost cost, gpu_ops[op](gpu(), x, y, out));
      EXPECT_EQ(cost.flops, host_cost->flops);
      EXPECT_EQ(cost.bytes, host_cost->bytes);
      EXPECT_EQ(cost.name, host_cost->name);
      return absl::OkStatus();
    });
    EXPECT_EQ(FirstDifference(ToHost(gpu(), out), want, /*nan_equal=*/true), "")
        << "op " << op;
  }
}

TEST_P(CudaDTypeTest, ScaleReluReluGradMatchTheHost) {
  const DType dtype = GetParam();
  if (dtype == DType::kBool) GTEST_SKIP() << "bool has no ReLU";
  Tensor a = TestValues(dtype, kCount, 3);
  Tensor g = TestValues(dtype, kCount, 4);
  Tensor x = ToGpu(gpu(), a);
  Tensor grad = ToGpu(gpu(), g);
  Tensor out = *gpu().Allocate(dtype, a.shape());
  Tensor want = *Tensor::Host(dtype, a.shape());
  ASSERT_TRUE(devices::Relu(a, want).ok());
  RunOnGpu([&] { return Relu(gpu(), x, out).status(); });
  EXPECT_EQ(FirstDifference(ToHost(gpu(), out), want, true), "") << "Relu";
  ASSERT_TRUE(devices::ReluGrad(g, a, want).ok());
  RunOnGpu([&] { return ReluGrad(gpu(), grad, x, out).status(); });
  EXPECT_EQ(FirstDifference(ToHost(gpu(), out), want, true), "") << "ReluGrad";
  if (!IsFloating(dtype)) return;
  ASSERT_TRUE(devices::Scale(a, -0.3, want).ok());
  RunOnGpu([&] { return Scale(gpu(), x, -0.3, out).status(); });
  EXPECT_EQ(FirstDifference(ToHost(gpu(), out), want, true), "") << "Scale";
}

TEST_P(CudaDTypeTest, FillAndIotaMatchTheHost) {
  const DType dtype = GetParam();
  Tensor want = *Tensor::Host(dtype, Shape({kCount}));
  Tensor out = *gpu().Allocate(dtype, Shape({kCount}));
  ASSERT_TRUE(devices::Fill(1, want).ok());
  RunOnGpu([&] { return Fill(gpu(), 1, out).status(); });
  EXPECT_EQ(FirstDifference(ToHost(gpu(), out), want), "") << "Fill";
  if (dtype == DType::kBool) return;
  const double start = IsFloating(dtype) ? -3.5 : 2;
  const double step =
      IsFloating(dtype) ? 0.1 : (dtype == DType::kUInt8 ? 0 : 3);
  ASSERT_TRUE(devices::Iota(start, step, want).ok());
  RunOnGpu([&] { return Iota(gpu(), start, step, out).status(); });
  EXPECT_EQ(FirstDifference(ToHost(gpu(), out), want), "") << "Iota";
}

TEST_P(CudaDTypeTest, ReductionsMatchTheHost) {
  const DType dtype = GetParam();
  // 11 inputs take two passes of the fused kernel (8, then the output and
  // 3 more); the in-place output is then an input of the first pass only.
  for (int count : {3, 11}) {
    for (ReduceOp op : kAllReduceOps) {
      if (dtype == DType::kBool && op == ReduceOp::kMean) continue;
      std::vector<Tensor> host_inputs;
      std::vector<Tensor> gpu_inputs;
      for (int i = 0; i < count; ++i) {
        host_inputs.push_back(TestValues(dtype, kCount, 5 + i));
        gpu_inputs.push_back(ToGpu(gpu(), host_inputs.back()));
      }
      Tensor want = *Tensor::Host(dtype, Shape({kCount}));
      ASSERT_TRUE(devices::ReduceInto(op, host_inputs, want).ok());
      Tensor out = *gpu().Allocate(dtype, Shape({kCount}));
      RunOnGpu([&] { return ReduceInto(gpu(), op, gpu_inputs, out).status(); });
      EXPECT_EQ(FirstDifference(ToHost(gpu(), out), want, true), "")
          << ReduceOpName(op) << " of " << count;
      // In place: the output is the second input.
      RunOnGpu([&] {
        return ReduceInto(gpu(), op, gpu_inputs, gpu_inputs[1]).status();
      });
      EXPECT_EQ(FirstDifference(ToHost(gpu(), gpu_inputs[1]), want, true), "")
          << ReduceOpName(op) << " of " << count << " in place";
    }
  }
}

TEST_P(CudaDTypeTest, RandomValuesMatchTheHost) {
  const DType dtype = GetParam();
  if (dtype == DType::kBool) GTEST_SKIP() << "bool has no random values";
  const int64_t n = kCount + 1;  // Odd: the last normal pair is cut.
  Tensor want = *Tensor::Host(dtype, Shape({n}));
  Tensor out = *gpu().Allocate(dtype, Shape({n}));
  const double low = IsFloating(dtype) ? -2 : 0;
  const double high = IsFloating(dtype) ? 5 : 200;
  ASSERT_TRUE(devices::RandomUniform(99, low, high, want).ok());
  RunOnGpu([&] { return RandomUniform(gpu(), 99, low, high, out).status(); });
  EXPECT_EQ(FirstDifference(ToHost(gpu(), out), want), "") << "uniform";
  if (!IsFloating(dtype)) return;
  ASSERT_TRUE(devices::RandomNormal(99, 1, 0.5, want).ok());
  RunOnGpu([&] { return RandomNormal(gpu(), 99, 1, 0.5, out).status(); });
  if (dtype == DType::kFloat64) {
    // CUDA's log/sin/cos are within 2 ulp of libm's.
    EXPECT_EQ(FirstMismatch(ToHost(gpu(), out), want, 1e-14), "") << "normal";
  } else {
    EXPECT_EQ(FirstDifference(ToHost(gpu(), out), want), "") << "normal";
  }
}

TEST_P(CudaDTypeTest, MatMulMatchesTheHost) {
  const DType dtype = GetParam();
  if (!IsFloating(dtype)) GTEST_SKIP() << "MatMul takes floating dtypes";
  // Relative to max(1, |value|); the sums of 53 products are taken in a
  // different order, and 16-bit results are rounded once from float32.
  const double tolerance = dtype == DType::kFloat64   ? 1e-12
                           : dtype == DType::kFloat32 ? 1e-5
                           : dtype == DType::kFloat16 ? 4e-3
                                                      : 2e-2;
  const int64_t m = 37, k = 53, n = 29;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = *Tensor::Host(dtype, ta ? Shape({k, m}) : Shape({m, k}));
      Tensor b = *Tensor::Host(dtype, tb ? Shape({n, k}) : Shape({k, n}));
      ASSERT_TRUE(devices::RandomUniform(1, -1, 1, a).ok());
      ASSERT_TRUE(devices::RandomUniform(2, -1, 1, b).ok());
      Tensor want = *Tensor::Host(dtype, Shape({m, n}));
      absl::StatusOr<KernelCost> host_cost =
          devices::MatMul(a, b, ta, tb, want);
      ASSERT_TRUE(host_cost.ok()) << host_cost.status();
      Tensor x = ToGpu(gpu(), a);
      Tensor y = ToGpu(gpu(), b);
      Tensor out = *gpu().Allocate(dtype, Shape({m, n}));
      RunOnGpu([&] {
        absl::StatusOr<KernelCost> cost = MatMul(gpu(), x, y, ta, tb, out);
        if (cost.ok()) {
          EXPECT_EQ(cost->flops, host_cost->flops);
        }
        return cost.status();
      });
      EXPECT_EQ(FirstMismatch(ToHost(gpu(), out), want, tolerance), "")
          << "transpose_a=" << ta << " transpose_b=" << tb;
    }
  }
}

TEST_P(CudaDTypeTest, SoftmaxCrossEntropyMatchesTheHost) {
  const DType dtype = GetParam();
  if (!IsFloating(dtype)) GTEST_SKIP() << "logits are floating";
  const double tolerance = dtype == DType::kFloat64   ? 1e-12
                           : dtype == DType::kFloat32 ? 1e-5
                                                      : 1e-2;
  for (int64_t classes : {int64_t{1}, int64_t{10}, int64_t{1000}}) {
    const int64_t batch = 33;
    Tensor logits = *Tensor::Host(dtype, Shape({batch, classes}));
    ASSERT_TRUE(devices::RandomUniform(3, -5, 5, logits).ok());
    Tensor labels = *Tensor::Host(DType::kInt64, Shape({batch}));
    ASSERT_TRUE(
        devices::RandomUniform(4, 0, static_cast<double>(classes), labels)
            .ok());
    Tensor want_loss = *Tensor::Host(dtype, Shape({batch}));
    Tensor want_d = *Tensor::Host(dtype, logits.shape());
    ASSERT_TRUE(
        devices::SoftmaxCrossEntropy(logits, labels, want_loss, want_d).ok());
    Tensor x = ToGpu(gpu(), logits);
    Tensor l = ToGpu(gpu(), labels);
    Tensor loss = *gpu().Allocate(dtype, Shape({batch}));
    Tensor d = *gpu().Allocate(dtype, logits.shape());
    RunOnGpu(
        [&] { return SoftmaxCrossEntropy(gpu(), x, l, loss, d).status(); });
    EXPECT_EQ(FirstMismatch(ToHost(gpu(), loss), want_loss, tolerance), "")
        << classes << " classes";
    EXPECT_EQ(FirstMismatch(ToHost(gpu(), d), want_d, tolerance), "")
        << classes << " classes";
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, CudaDTypeTest,
                         ::testing::ValuesIn(kAllDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

TEST_F(CudaKernelsTest, LargeInputsUseTheWholeGrid) {
  // More elements than one pass of the grid covers.
  const int64_t n = (int64_t{1} << 24) + 3;
  Tensor a = *Tensor::Host(DType::kFloat32, Shape({n}));
  ASSERT_TRUE(devices::Iota(0, 1, a).ok());
  Tensor x = ToGpu(gpu(), a);
  Tensor out = *gpu().Allocate(DType::kFloat32, Shape({n}));
  ASSERT_TRUE(Add(gpu(), x, x, out).ok());
  Tensor want = *Tensor::Host(DType::kFloat32, Shape({n}));
  ASSERT_TRUE(devices::Add(a, a, want).ok());
  EXPECT_EQ(FirstDifference(ToHost(gpu(), out), want), "");
}

TEST_F(CudaKernelsTest, IntegerDivisionByZeroNamesTheElement) {
  Tensor a = ToGpu(gpu(), Tensor::FromVector<int32_t>({6, 7, 8, 9}));
  Tensor b = ToGpu(gpu(), Tensor::FromVector<int32_t>({1, 2, 0, 0}));
  Tensor out = *gpu().Allocate(DType::kInt32, Shape({4}));
  absl::StatusOr<KernelCost> cost = Div(gpu(), a, b, out);
  EXPECT_EQ(cost.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(cost.status().message().find("element 2"), std::string::npos)
      << cost.status();
}

TEST_F(CudaKernelsTest, SoftmaxLabelOutOfRangeNamesTheRow) {
  Tensor logits = *gpu().Allocate(DType::kFloat32, Shape({3, 4}));
  ASSERT_TRUE(Fill(gpu(), 0, logits).ok());
  Tensor labels = ToGpu(gpu(), Tensor::FromVector<int32_t>({0, 3, 4}));
  Tensor loss = *gpu().Allocate(DType::kFloat32, Shape({3}));
  Tensor d = *gpu().Allocate(DType::kFloat32, Shape({3, 4}));
  absl::StatusOr<KernelCost> cost =
      SoftmaxCrossEntropy(gpu(), logits, labels, loss, d);
  EXPECT_EQ(cost.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(cost.status().message().find("label 4 of row 2"), std::string::npos)
      << cost.status();
}

TEST_F(CudaKernelsTest, ArgumentErrors) {
  Tensor host = *Tensor::Host(DType::kFloat32, Shape({4}));
  Tensor x = *gpu().Allocate(DType::kFloat32, Shape({4}));
  Tensor y = *gpu().Allocate(DType::kFloat32, Shape({5}));
  Tensor flags = *gpu().Allocate(DType::kBool, Shape({4}));
  Tensor ints = *gpu().Allocate(DType::kInt32, Shape({4}));
  // A host tensor is not on the GPU.
  EXPECT_EQ(Add(gpu(), x, host, x).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Shapes and dtypes must match.
  EXPECT_EQ(Add(gpu(), x, y, x).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Add(gpu(), flags, flags, flags).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Scale(gpu(), ints, 2, ints).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Fill(gpu(), 0.5, ints).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Fill(gpu(), 2, flags).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Iota(gpu(), 0, 1, flags).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RandomNormal(gpu(), 1, 0, -1, x).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RandomUniform(gpu(), 1, 2, 1, x).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReduceInto(gpu(), ReduceOp::kMean, {flags}, flags).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReduceInto(gpu(), ReduceOp::kSum, {}, x).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Accumulate(gpu(), ReduceOp::kSum, nullptr, x.raw_data(), 4,
                       DType::kFloat32)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  Tensor square = *gpu().Allocate(DType::kFloat32, Shape({2, 2}));
  EXPECT_EQ(MatMul(gpu(), square, square, false, false, square).status().code(),
            absl::StatusCode::kInvalidArgument);
  // The shape-only tensors of timing-only devices have no data.
  Tensor shape_only =
      Tensor::ShapeOnly(DType::kFloat32, Shape({4}), gpu().name());
  EXPECT_EQ(Relu(gpu(), shape_only, x).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Fill(gpu(), 0, shape_only).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CudaKernelsTest, EmptyTensors) {
  Tensor empty = *gpu().Allocate(DType::kFloat32, Shape({0}));
  EXPECT_TRUE(Add(gpu(), empty, empty, empty).ok());
  EXPECT_TRUE(Fill(gpu(), 1, empty).ok());
  EXPECT_TRUE(RandomNormal(gpu(), 1, 0, 1, empty).ok());
  Tensor a = *gpu().Allocate(DType::kFloat32, Shape({3, 0}));
  Tensor b = *gpu().Allocate(DType::kFloat32, Shape({0, 2}));
  Tensor out = *gpu().Allocate(DType::kFloat32, Shape({3, 2}));
  ASSERT_TRUE(MatMul(gpu(), a, b, false, false, out).ok());
  EXPECT_EQ(ToHost(gpu(), out).ToVector<float>(), std::vector<float>(6, 0.0f));
}

TEST_F(CudaKernelsTest, SleepKernelDelaysTheStream) {
  ASSERT_EQ(LaunchSleep(1000000, gpu().stream()), cudaSuccess);
  EXPECT_TRUE(gpu().Synchronize(absl::Seconds(30)).ok());
}

}  // namespace
}  // namespace cuda
}  // namespace devices

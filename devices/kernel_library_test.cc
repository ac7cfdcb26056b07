#include "devices/kernel_library.h"

#include <vector>

#include "absl/status/status.h"
#include "devices/host_device.h"
#include "devices/kernels.h"
#include "gtest/gtest.h"

namespace devices {
namespace {

Tensor Floats(const std::vector<float>& v, Shape shape) {
  return *Tensor::FromVector<float>(v, std::move(shape));
}

TEST(HostKernelsTest, IsOneHostLibrary) {
  EXPECT_EQ(&HostKernels(), &HostKernels());
  EXPECT_EQ(HostKernels().name(), "host");
  EXPECT_EQ(HostKernels().memory_space(), MemorySpace::kHost);
}

TEST(HostKernelsTest, HostDevicesHandOutTheHostLibrary) {
  HostDevice cpu("/job:localhost/replica:0/task:0/device:CPU:0", 1 << 20);
  EXPECT_EQ(&cpu.kernels(), &HostKernels());
}

TEST(HostKernelsTest, GivesTheHostKernelsResultsAndCosts) {
  const KernelLibrary& k = HostKernels();
  Tensor a = Floats({1, -2, 3, -4, 5, -6}, {2, 3});
  Tensor b = Floats({6, 5, 4, 3, 2, 1}, {2, 3});
  Tensor via_library = *Tensor::Host(DType::kFloat32, {2, 3});
  Tensor direct = *Tensor::Host(DType::kFloat32, {2, 3});
  for (BinaryOp op :
       {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv}) {
    absl::StatusOr<KernelCost> cost = k.Binary(op, a, b, via_library);
    ASSERT_TRUE(cost.ok()) << cost.status();
    ASSERT_TRUE(BinaryRaw(op, a.raw_data(), b.raw_data(), direct.raw_data(), 6,
                          DType::kFloat32)
                    .ok());
    EXPECT_EQ(via_library.ToVector<float>(), direct.ToVector<float>());
    EXPECT_EQ(cost->name, BinaryOpName(op));
  }
  // MatMul [2,3] x [3,2] through the library and directly.
  Tensor y = *Tensor::Host(DType::kFloat32, {2, 2});
  Tensor y_direct = *Tensor::Host(DType::kFloat32, {2, 2});
  absl::StatusOr<KernelCost> mm = k.MatMul(a, b, false, true, y);
  ASSERT_TRUE(mm.ok()) << mm.status();
  ASSERT_TRUE(MatMul(a, b, false, true, y_direct).ok());
  EXPECT_EQ(y.ToVector<float>(), y_direct.ToVector<float>());
  EXPECT_EQ(mm->flops, MatMulCost(DType::kFloat32, 2, 2, 3).flops);
  // A training kernel.
  Tensor bias = Floats({10, 20}, {2});
  ASSERT_TRUE(k.BiasAdd(bias, y).ok());
  EXPECT_EQ(y.ToVector<float>()[1], y_direct.ToVector<float>()[1] + 20);
}

TEST(HostKernelsTest, AccumulateAndFinalizeMeanTakeTensors) {
  const KernelLibrary& k = HostKernels();
  Tensor dst = Floats({1, 2, 3}, {3});
  absl::StatusOr<KernelCost> cost =
      k.Accumulate(ReduceOp::kSum, Floats({10, 20, 30}, {3}), dst);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(dst.ToVector<float>(), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(cost->bytes, AccumulateCost(DType::kFloat32, 3).bytes);
  ASSERT_TRUE(k.FinalizeMean(dst, 11).ok());
  EXPECT_EQ(dst.ToVector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(
      k.Accumulate(ReduceOp::kSum, Floats({1, 2}, {2}), dst).status().code(),
      absl::StatusCode::kInvalidArgument);
  Tensor shape_only = Tensor::ShapeOnly(DType::kFloat32, {3}, "sim:0");
  EXPECT_EQ(k.Accumulate(ReduceOp::kSum, shape_only, dst).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(k.FinalizeMean(shape_only, 2).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace devices

#include "distribute/collective/packing.h"

#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "devices/allocator.h"
#include "devices/status_macros.h"

namespace distribute {
namespace collective {
namespace {

// Splits one group of tensor indices (in order) by dtype, in order of first
// appearance, into packs holding whole tensors.
void AppendWholeTensorPacks(const std::vector<devices::Tensor>& tensors,
                            const std::vector<int>& group, PackPlan& plan) {
  std::vector<devices::DType> order;
  std::map<devices::DType, TensorPack> by_dtype;
  for (int i : group) {
    const devices::DType d = tensors[i].dtype();
    auto [it, inserted] = by_dtype.try_emplace(d);
    if (inserted) {
      order.push_back(d);
      it->second.dtype = d;
    }
    it->second.segments.push_back({i, 0, tensors[i].num_elements()});
    it->second.count += tensors[i].num_elements();
  }
  for (devices::DType d : order) plan.packs.push_back(std::move(by_dtype[d]));
}

}  // namespace

absl::StatusOr<PackPlan> PlanByBytes(
    const std::vector<devices::Tensor>& tensors, int64_t bytes_per_pack) {
  if (bytes_per_pack < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bytes_per_pack must be non-negative, got ", bytes_per_pack));
  }
  std::vector<std::vector<int>> groups;
  int64_t last_size = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (groups.empty() || (bytes_per_pack > 0 && last_size > bytes_per_pack)) {
      groups.emplace_back();
      last_size = 0;
    }
    groups.back().push_back(static_cast<int>(i));
    last_size += static_cast<int64_t>(tensors[i].bytes());
  }
  PackPlan plan;
  for (const auto& g : groups) AppendWholeTensorPacks(tensors, g, plan);
  return plan;
}

absl::StatusOr<PackPlan> PlanByCount(
    const std::vector<devices::Tensor>& tensors, int num_packs) {
  if (num_packs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_packs must be non-negative, got ", num_packs));
  }
  PackPlan plan;
  if (num_packs == 0) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      AppendWholeTensorPacks(tensors, {static_cast<int>(i)}, plan);
    }
    return plan;
  }
  // Per dtype (in order of first appearance): concatenate, then split.
  std::vector<devices::DType> order;
  std::map<devices::DType, std::vector<int>> by_dtype;
  for (size_t i = 0; i < tensors.size(); ++i) {
    auto [it, inserted] = by_dtype.try_emplace(tensors[i].dtype());
    if (inserted) order.push_back(tensors[i].dtype());
    it->second.push_back(static_cast<int>(i));
  }
  for (devices::DType d : order) {
    const std::vector<int>& members = by_dtype[d];
    int64_t total = 0;
    for (int i : members) total += tensors[i].num_elements();
    const int64_t split = total / num_packs;
    size_t member = 0;
    int64_t offset = 0;  // within tensors[members[member]]
    for (int p = 0; p < num_packs; ++p) {
      int64_t want =
          p + 1 < num_packs ? split : total - split * (num_packs - 1);
      TensorPack pack;
      pack.dtype = d;
      pack.count = want;
      while (want > 0) {
        const int t = members[member];
        const int64_t take = std::min(want, tensors[t].num_elements() - offset);
        if (take > 0) pack.segments.push_back({t, offset, take});
        want -= take;
        offset += take;
        if (offset == tensors[t].num_elements()) {
          ++member;
          offset = 0;
        }
      }
      if (pack.count > 0) plan.packs.push_back(std::move(pack));
    }
  }
  return plan;
}

absl::StatusOr<std::vector<devices::Tensor>> PackTensors(
    const PackPlan& plan, const std::vector<devices::Tensor>& tensors) {
  std::vector<devices::Tensor> packed;
  packed.reserve(plan.packs.size());
  for (const TensorPack& pack : plan.packs) {
    if (pack.segments.empty()) continue;
    const devices::Tensor& first = tensors.at(pack.segments[0].tensor);
    const devices::Shape shape({pack.count});
    // A pack of one whole tensor is the tensor itself (no copy).
    if (pack.segments.size() == 1 && pack.count == first.num_elements()) {
      ASSIGN_OR_RETURN(devices::Tensor flat, first.Reshape(shape));
      packed.push_back(std::move(flat));
      continue;
    }
    if (!first.has_data()) {
      packed.push_back(
          devices::Tensor::ShapeOnly(pack.dtype, shape, first.device()));
      continue;
    }
    ASSIGN_OR_RETURN(
        devices::Tensor buffer,
        devices::Tensor::Allocate(devices::HostHeapAllocator(), pack.dtype,
                                  shape, first.device()));
    const size_t elem = devices::DTypeSize(pack.dtype);
    auto* out = static_cast<std::byte*>(buffer.raw_data());
    for (const PackSegment& s : pack.segments) {
      const devices::Tensor& t = tensors.at(s.tensor);
      if (t.dtype() != pack.dtype) {
        return absl::InvalidArgumentError(
            "Pack: the tensors do not match the plan's dtypes");
      }
      std::memcpy(out,
                  static_cast<const std::byte*>(t.raw_data()) + s.offset * elem,
                  s.count * elem);
      out += s.count * elem;
    }
    packed.push_back(std::move(buffer));
  }
  return packed;
}

absl::Status UnpackTensors(const PackPlan& plan,
                           const std::vector<devices::Tensor>& packed,
                           std::vector<devices::Tensor>& outputs) {
  size_t k = 0;
  for (const TensorPack& pack : plan.packs) {
    if (pack.segments.empty()) continue;
    if (k >= packed.size()) {
      return absl::InvalidArgumentError("Unpack: fewer packs than planned");
    }
    const devices::Tensor& p = packed[k++];
    if (!p.has_data()) continue;
    const size_t elem = devices::DTypeSize(pack.dtype);
    const auto* in = static_cast<const std::byte*>(p.raw_data());
    for (const PackSegment& s : pack.segments) {
      devices::Tensor& t = outputs.at(s.tensor);
      auto* dst = static_cast<std::byte*>(t.raw_data()) + s.offset * elem;
      if (dst != in) std::memcpy(dst, in, s.count * elem);
      in += s.count * elem;
    }
  }
  return absl::OkStatus();
}

}  // namespace collective
}  // namespace distribute

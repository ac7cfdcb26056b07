#include "distribute/ps/in_process_ps.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/kernel_library.h"
#include "devices/status_macros.h"
#include "distribute/ps/ps_client.h"
#include "distribute/strategy_devices.h"
#include "distribute/thread_group.h"

namespace distribute {
namespace ps {

namespace {

// `shape` with `rows` in its first dimension.
devices::Shape RowsShape(const devices::Shape& shape, int64_t rows) {
  std::vector<int64_t> dims(shape.dims().begin(), shape.dims().end());
  dims[0] = rows;
  // The dims of a shape made already, with fewer rows: always valid.
  return *devices::Shape::Make(dims);
}

}  // namespace

// A variable of InProcessParameterServers: its shards on the ps devices.
class InProcessVariableStorage : public RemoteVariableStorage {
 public:
  InProcessVariableStorage(std::shared_ptr<InProcessParameterServers> servers,
                           std::string name, std::vector<std::string> locations)
      : servers_(std::move(servers)),
        name_(std::move(name)),
        locations_(std::move(locations)) {}

  absl::StatusOr<devices::Tensor> Read(devices::Device* reader) override {
    ASSIGN_OR_RETURN(std::shared_ptr<InProcessParameterServers::Entry> entry,
                     servers_->Find(name_));
    devices::Platform& platform = servers_->platform();
    // Each shard crosses to the reader (or the host).
    std::vector<devices::Tensor> pieces;
    for (const devices::Tensor& shard : entry->shards) {
      ASSIGN_OR_RETURN(devices::Tensor piece,
                       reader != nullptr
                           ? devices::CopyTensorTo(platform, shard, *reader)
                           : devices::ToHostTensor(platform, shard));
      pieces.push_back(std::move(piece));
    }
    if (pieces.size() == 1) return std::move(pieces[0]);
    // Shards are put together in host memory.
    const Variable& layout = entry->layout;
    ASSIGN_OR_RETURN(devices::Tensor whole,
                     devices::Tensor::Host(layout.dtype, layout.shape));
    if (!pieces[0].has_data()) {
      return devices::Tensor::ShapeOnly(layout.dtype, layout.shape, "");
    }
    const int64_t row_bytes = whole.bytes() / layout.shape.dim(0);
    for (size_t k = 0; k < pieces.size(); ++k) {
      ASSIGN_OR_RETURN(devices::Tensor host,
                       devices::ToHostTensor(platform, pieces[k]));
      std::memcpy(static_cast<char*>(whole.raw_data()) +
                      layout.shards[k].offset * row_bytes,
                  host.raw_data(), host.bytes());
    }
    return whole;
  }

  // Only the rows named cross from the shards that hold them to the reader.
  absl::StatusOr<devices::Tensor> Gather(const devices::Tensor& ids,
                                         devices::Device* reader) override {
    ASSIGN_OR_RETURN(std::shared_ptr<InProcessParameterServers::Entry> entry,
                     servers_->Find(name_));
    devices::Platform& platform = servers_->platform();
    const Variable& layout = entry->layout;
    const std::vector<devices::Tensor>& shards = entry->shards;
    std::vector<int64_t> row_dims(layout.shape.dims().begin() + 1,
                                  layout.shape.dims().end());
    std::vector<int64_t> out_dims(ids.shape().dims().begin(),
                                  ids.shape().dims().end());
    out_dims.insert(out_dims.end(), row_dims.begin(), row_dims.end());
    ASSIGN_OR_RETURN(devices::Shape out_shape, devices::Shape::Make(out_dims));
    const bool data = shards[0].has_data();
    devices::Tensor out =
        devices::Tensor::ShapeOnly(layout.dtype, out_shape, "");
    if (data) {
      ASSIGN_OR_RETURN(devices::Tensor made,
                       devices::Tensor::Host(layout.dtype, out_shape));
      out = std::move(made);
    }
    const int64_t n = ids.num_elements();
    const size_t row_bytes =
        n > 0 ? static_cast<size_t>(out.bytes() / static_cast<size_t>(n)) : 0;
    for (size_t k = 0; k < shards.size(); ++k) {
      const ShardInfo& info = layout.shards[k];
      std::vector<int64_t> positions;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t id = ids.dtype() == devices::DType::kInt32
                               ? ids.data<int32_t>()[i]
                               : ids.data<int64_t>()[i];
        if (id >= info.offset && id < info.offset + info.rows) {
          positions.push_back(i);
        }
      }
      if (positions.empty()) continue;
      std::vector<int64_t> dims = {static_cast<int64_t>(positions.size())};
      dims.insert(dims.end(), row_dims.begin(), row_dims.end());
      ASSIGN_OR_RETURN(devices::Shape rows_shape, devices::Shape::Make(dims));
      devices::Tensor rows =
          devices::Tensor::ShapeOnly(layout.dtype, rows_shape, "");
      if (data) {
        ASSIGN_OR_RETURN(devices::Tensor shard,
                         devices::ToHostTensor(platform, shards[k]));
        ASSIGN_OR_RETURN(devices::Tensor made,
                         devices::Tensor::Host(layout.dtype, rows_shape));
        for (size_t j = 0; j < positions.size(); ++j) {
          const int64_t id = ids.dtype() == devices::DType::kInt32
                                 ? ids.data<int32_t>()[positions[j]]
                                 : ids.data<int64_t>()[positions[j]];
          std::memcpy(static_cast<char*>(made.raw_data()) + j * row_bytes,
                      static_cast<const char*>(shard.raw_data()) +
                          (id - info.offset) * row_bytes,
                      row_bytes);
        }
        rows = std::move(made);
      }
      if (reader != nullptr) {
        // The rows leave the shard's ps device for the reader.
        devices::Device& ps = *servers_->devices_[static_cast<size_t>(info.ps)];
        ASSIGN_OR_RETURN(devices::Tensor there,
                         devices::AsDeviceValue(rows, ps));
        ASSIGN_OR_RETURN(devices::Tensor moved,
                         devices::CopyTensorTo(platform, there, *reader));
        if (data) {
          ASSIGN_OR_RETURN(devices::Tensor host,
                           devices::ToHostTensor(platform, moved));
          rows = std::move(host);
        }
      }
      if (!data) continue;
      for (size_t j = 0; j < positions.size(); ++j) {
        std::memcpy(static_cast<char*>(out.raw_data()) +
                        static_cast<size_t>(positions[j]) * row_bytes,
                    static_cast<const char*>(rows.raw_data()) + j * row_bytes,
                    row_bytes);
      }
    }
    return out;
  }

  absl::Status Update(UpdateKind kind, const devices::Tensor& value,
                      devices::Device* writer) override {
    ASSIGN_OR_RETURN(std::shared_ptr<InProcessParameterServers::Entry> entry,
                     servers_->Find(name_));
    devices::Platform& platform = servers_->platform();
    const Variable& layout = entry->layout;
    std::vector<devices::Tensor>& shards = entry->shards;
    devices::Tensor host_value;
    if (shards.size() > 1 && value.has_data()) {
      ASSIGN_OR_RETURN(devices::Tensor host,
                       devices::ToHostTensor(platform, value));
      host_value = std::move(host);
    }
    for (size_t k = 0; k < shards.size(); ++k) {
      devices::Tensor piece = value;
      if (shards.size() > 1) {
        ASSIGN_OR_RETURN(
            devices::Tensor rows,
            value.has_data()
                ? RowsOf(host_value, layout.shards[k].offset,
                         layout.shards[k].rows)
                : absl::StatusOr<devices::Tensor>(devices::Tensor::ShapeOnly(
                      value.dtype(), shards[k].shape(), "")));
        piece = std::move(rows);
      }
      // The piece leaves from the writer's device.
      if (writer != nullptr) {
        ASSIGN_OR_RETURN(devices::Tensor sent,
                         devices::AsDeviceValue(piece, *writer));
        piece = std::move(sent);
      }
      RETURN_IF_ERROR(Apply(kind, piece, shards[k]));
    }
    return absl::OkStatus();
  }

  std::vector<std::string> Locations() const override { return locations_; }

 private:
  // shard (kind)= piece, on the shard's ps device: the piece crosses there,
  // and that device's kernels apply it.
  absl::Status Apply(UpdateKind kind, const devices::Tensor& piece,
                     devices::Tensor& shard) {
    devices::Platform& platform = servers_->platform();
    if (kind == UpdateKind::kAssign) {
      return devices::CopyTensor(platform, piece, shard);
    }
    ASSIGN_OR_RETURN(devices::Device * ps, platform.FindDevice(shard.device()));
    ASSIGN_OR_RETURN(devices::Tensor there,
                     devices::CopyTensorTo(platform, piece, *ps));
    const devices::KernelLibrary& kernels = ps->kernels();
    ASSIGN_OR_RETURN(
        devices::KernelCost cost,
        kind == UpdateKind::kAdd
            ? kernels.Accumulate(devices::ReduceOp::kSum, there, shard)
            : kernels.Binary(devices::BinaryOp::kSub, shard, there, shard));
    // The update ran; the ps device's clock pays for it (on a simulated
    // device, after the updates queued there before it).
    return (ps)
        ->Enqueue(cost, [] { return absl::OkStatus(); })
        ->Wait(absl::InfiniteDuration());
  }

  const std::shared_ptr<InProcessParameterServers> servers_;
  const std::string name_;
  const std::vector<std::string> locations_;
};

absl::StatusOr<std::shared_ptr<InProcessParameterServers>>
InProcessParameterServers::Create(devices::Platform& platform,
                                  const std::vector<std::string>& ps_devices) {
  ASSIGN_OR_RETURN(std::vector<std::string> resolved,
                   ResolveDevices(platform, ps_devices));
  std::vector<devices::Device*> devices;
  for (const std::string& name : resolved) {
    ASSIGN_OR_RETURN(devices::Device * d, platform.FindDevice(name));
    if (!d->functional()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "ps device ", name, " of platform ", platform.name(),
          " is timing-only (it carries no values), but parameter servers "
          "keep the variables' values and workers compute from them: use a "
          "functional platform (drop \";timing\")"));
    }
    devices.push_back(d);
  }
  return std::shared_ptr<InProcessParameterServers>(
      new InProcessParameterServers(platform, std::move(resolved),
                                    std::move(devices)));
}

int64_t InProcessParameterServers::size() const {
  absl::MutexLock lock(&mu_);
  int64_t n = 0;
  for (const auto& [name, entry] : entries_) {
    n += static_cast<int64_t>(entry->shards.size());
  }
  return n;
}

absl::Status InProcessParameterServers::CreateVariable(
    const Variable& layout, const devices::Tensor& initial) {
  {
    absl::MutexLock lock(&mu_);
    if (entries_.count(layout.name) > 0) {
      return absl::AlreadyExistsError(absl::StrCat(
          "a variable \"", layout.name, "\" exists on the ps tasks already"));
    }
  }
  auto entry = std::make_shared<Entry>();
  entry->layout = layout;
  ASSIGN_OR_RETURN(devices::Tensor host,
                   devices::ToHostTensor(platform_, initial));
  for (const ShardInfo& shard : layout.shards) {
    if (shard.ps < 0 || shard.ps >= static_cast<int>(devices_.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable \"", layout.name, "\" placed on ps task ",
                       shard.ps, " of ", devices_.size()));
    }
    devices::Tensor piece = host;
    if (layout.shards.size() > 1) {
      ASSIGN_OR_RETURN(
          devices::Tensor rows,
          host.has_data()
              ? RowsOf(host, shard.offset, shard.rows)
              : absl::StatusOr<devices::Tensor>(devices::Tensor::ShapeOnly(
                    host.dtype(), RowsShape(host.shape(), shard.rows), "")));
      piece = std::move(rows);
    }
    ASSIGN_OR_RETURN(
        devices::Tensor placed,
        devices::CopyTensorTo(platform_, piece,
                              *devices_[static_cast<size_t>(shard.ps)]));
    entry->shards.push_back(std::move(placed));
  }
  absl::MutexLock lock(&mu_);
  if (!entries_.emplace(layout.name, std::move(entry)).second) {
    return absl::AlreadyExistsError(absl::StrCat(
        "a variable \"", layout.name, "\" exists on the ps tasks already"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Variable> InProcessParameterServers::Layout(
    const std::string& name) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, Find(name));
  return entry->layout;
}

std::shared_ptr<RemoteVariableStorage> InProcessParameterServers::Storage(
    std::string name, std::vector<std::string> locations) {
  return std::make_shared<InProcessVariableStorage>(
      shared_from_this(), std::move(name), std::move(locations));
}

absl::StatusOr<std::shared_ptr<InProcessParameterServers::Entry>>
InProcessParameterServers::Find(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "no ps task has a variable \"", name,
        "\": the coordinator's strategy makes it when it creates it in its "
        "scope"));
  }
  return it->second;
}

absl::Status RunOnWorkers(
    const std::vector<devices::Device*>& workers, int64_t num_calls,
    const std::function<absl::Status(int worker, int64_t call)>& fn) {
  if (workers.empty() || num_calls < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("RunOnWorkers needs workers (", workers.size(),
                     ") and a call count >= 0 (", num_calls, ")"));
  }
  absl::Mutex mu;
  // Worker w starts with call w: the workers start at once, before any of
  // them waits on the simulator, so who would take a call first is up to
  // the host. Later calls are taken when a worker is done with one, which
  // on the simulator happens one worker at a time, in simulated time.
  const int64_t first_calls =
      std::min<int64_t>(num_calls, static_cast<int64_t>(workers.size()));
  int64_t next = first_calls;
  bool failed = false;
  std::map<int64_t, absl::Status> errors;
  internal::RunBoundThreads(workers, [&](int w) {
    for (bool first = true;; first = false) {
      int64_t call = 0;
      if (first) {
        if (w >= first_calls) return;
        call = w;
      } else {
        absl::MutexLock lock(&mu);
        if (failed || next >= num_calls) return;
        call = next++;
      }
      absl::Status s = fn(w, call);
      if (!s.ok()) {
        absl::MutexLock lock(&mu);
        failed = true;
        errors.emplace(
            call,
            absl::Status(s.code(), absl::StrCat("call ", call, " on worker ", w,
                                                ": ", s.message())));
        return;
      }
    }
  });
  return errors.empty() ? absl::OkStatus() : errors.begin()->second;
}

}  // namespace ps
}  // namespace distribute

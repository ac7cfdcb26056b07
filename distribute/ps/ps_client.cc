#include "distribute/ps/ps_client.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/dtype.h"
#include "devices/elementwise_kernels.h"
#include "devices/shape.h"
#include "devices/status_macros.h"

namespace distribute {
namespace ps {
using ps_internal::UpdateKind;

namespace {

constexpr char kCreate[] = "__ps.create";
constexpr char kLookup[] = "__ps.lookup";
constexpr char kRead[] = "__ps.read";
constexpr char kAssign[] = "__ps.assign";
constexpr char kAssignAdd[] = "__ps.assign_add";
constexpr char kAssignSub[] = "__ps.assign_sub";
constexpr char kGather[] = "__ps.gather";

absl::Status BadArgs(absl::string_view function, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(function, ": ", why,
                   " (the parameter-server functions are "
                   "called by PsClient)"));
}

// The int64 scalar or vector `t`'s values; INVALID_ARGUMENT otherwise.
absl::StatusOr<std::vector<int64_t>> Ints(const devices::Tensor& t,
                                          absl::string_view function) {
  if (t.dtype() != devices::DType::kInt64 || t.shape().rank() > 1 ||
      !t.has_data()) {
    return BadArgs(function, "expected an int64 scalar or vector");
  }
  return t.ToVector<int64_t>();
}

int64_t Rows(const devices::Tensor& t) {
  return t.shape().rank() == 0 ? 1 : t.shape().dim(0);
}

// A host copy of `t`.
absl::StatusOr<devices::Tensor> Copy(const devices::Tensor& t) {
  ASSIGN_OR_RETURN(devices::Tensor copy,
                   devices::Tensor::Host(t.dtype(), t.shape()));
  if (t.bytes() > 0) std::memcpy(copy.raw_data(), t.raw_data(), t.bytes());
  return copy;
}

}  // namespace

absl::StatusOr<devices::Tensor> RowsOf(const devices::Tensor& whole,
                                       int64_t offset, int64_t rows) {
  const devices::Shape& shape = whole.shape();
  if (shape.rank() == 0 || offset < 0 || rows < 0 ||
      offset > shape.dim(0) - rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("rows [", offset, ", ", offset + rows,
                     ") are not rows of ", shape.DebugString()));
  }
  std::vector<int64_t> dims(shape.dims().begin(), shape.dims().end());
  dims[0] = rows;
  ASSIGN_OR_RETURN(devices::Shape piece_shape, devices::Shape::Make(dims));
  ASSIGN_OR_RETURN(devices::Tensor piece,
                   devices::Tensor::Host(whole.dtype(), piece_shape));
  if (piece.bytes() > 0) {
    const size_t row_bytes = whole.bytes() / static_cast<size_t>(shape.dim(0));
    std::memcpy(piece.raw_data(),
                static_cast<const char*>(whole.raw_data()) +
                    static_cast<size_t>(offset) * row_bytes,
                piece.bytes());
  }
  return piece;
}

devices::Tensor NameTensor(absl::string_view name) {
  return devices::Tensor::FromVector<uint8_t>(
      std::vector<uint8_t>(name.begin(), name.end()));
}

absl::StatusOr<std::string> TensorName(const devices::Tensor& tensor) {
  if (tensor.dtype() != devices::DType::kUInt8 || tensor.shape().rank() != 1 ||
      (tensor.num_elements() > 0 && !tensor.has_data())) {
    return absl::InvalidArgumentError(
        "a name travels as a uint8 vector (NameTensor)");
  }
  const std::vector<uint8_t> bytes = tensor.ToVector<uint8_t>();
  return std::string(bytes.begin(), bytes.end());
}

absl::StatusOr<std::shared_ptr<VariableStore>> VariableStore::Install(
    FunctionRegistry& registry) {
  auto store = std::make_shared<VariableStore>();
  std::weak_ptr<VariableStore> weak = store;
  // The registry may outlive the store: its functions hold it weakly.
  auto bind = [weak](auto method) {
    return [weak, method](std::vector<devices::Tensor> args)
               -> absl::StatusOr<std::vector<devices::Tensor>> {
      std::shared_ptr<VariableStore> s = weak.lock();
      if (s == nullptr) {
        return absl::UnavailableError("this ps task's variable store is gone");
      }
      return method(*s, std::move(args));
    };
  };
  const std::vector<std::pair<const char*, RemoteFunction>> functions = {
      {kCreate, bind([](VariableStore& s, std::vector<devices::Tensor> a) {
         return s.Create(std::move(a));
       })},
      {kLookup, bind([](VariableStore& s, std::vector<devices::Tensor> a) {
         return s.Lookup(std::move(a));
       })},
      {kRead, bind([](VariableStore& s, std::vector<devices::Tensor> a) {
         return s.Read(std::move(a));
       })},
      {kAssign, bind([](VariableStore& s, std::vector<devices::Tensor> a) {
         return s.Update(std::move(a), UpdateKind::kAssign);
       })},
      {kAssignAdd, bind([](VariableStore& s, std::vector<devices::Tensor> a) {
         return s.Update(std::move(a), UpdateKind::kAdd);
       })},
      {kAssignSub, bind([](VariableStore& s, std::vector<devices::Tensor> a) {
         return s.Update(std::move(a), UpdateKind::kSub);
       })},
      {kGather, bind([](VariableStore& s, std::vector<devices::Tensor> a) {
         return s.Gather(std::move(a));
       })},
  };
  const std::vector<std::string> taken = registry.names();
  for (const auto& [name, fn] : functions) {
    if (std::find(taken.begin(), taken.end(), name) != taken.end()) {
      return absl::AlreadyExistsError(
          absl::StrCat("this server's registry has \"", name,
                       "\" already: a ps task installs one VariableStore"));
    }
  }
  for (const auto& [name, fn] : functions) {
    RETURN_IF_ERROR(registry.Register(name, fn));
  }
  return store;
}

int64_t VariableStore::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(vars_.size());
}

absl::StatusOr<std::vector<devices::Tensor>> VariableStore::Create(
    std::vector<devices::Tensor> args) {
  if (args.size() != 3) return BadArgs(kCreate, "expected name, meta, value");
  ASSIGN_OR_RETURN(std::string name, TensorName(args[0]));
  ASSIGN_OR_RETURN(std::vector<int64_t> meta, Ints(args[1], kCreate));
  if (meta.size() != 3 || meta[0] < 0 || meta[1] < 1 || meta[0] >= meta[1] ||
      meta[2] < 0) {
    return BadArgs(kCreate, "meta is {shard, num_shards, offset}");
  }
  if (!args[2].has_data() && args[2].num_elements() > 0) {
    return BadArgs(kCreate, "the initial value has no data");
  }
  const Key key{name, meta[0]};
  absl::MutexLock lock(&mu_);
  auto it = vars_.find(key);
  if (it != vars_.end()) {
    const Entry& e = it->second;
    if (e.value.SameShapeAndType(args[2]) && e.num_shards == meta[1] &&
        e.offset == meta[2]) {
      return std::vector<devices::Tensor>{};
    }
    return absl::AlreadyExistsError(absl::StrCat(
        "shard ", key.second, " of variable \"", name,
        "\" exists on this ps task as ", devices::DTypeName(e.value.dtype()),
        e.value.shape().DebugString(),
        ": give each variable a name of its "
        "own"));
  }
  vars_.emplace(key, Entry{std::move(args[2]), meta[1], meta[2]});
  return std::vector<devices::Tensor>{};
}

absl::StatusOr<std::vector<devices::Tensor>> VariableStore::Lookup(
    std::vector<devices::Tensor> args) const {
  if (args.size() != 1) return BadArgs(kLookup, "expected a name");
  ASSIGN_OR_RETURN(std::string name, TensorName(args[0]));
  std::vector<int64_t> rows;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = vars_.lower_bound(Key{name, 0});
         it != vars_.end() && it->first.first == name; ++it) {
      rows.insert(rows.end(), {it->first.second, it->second.num_shards,
                               it->second.offset, Rows(it->second.value)});
    }
  }
  ASSIGN_OR_RETURN(
      devices::Tensor out,
      devices::Tensor::FromVector<int64_t>(
          rows, devices::Shape({static_cast<int64_t>(rows.size() / 4), 4})));
  return std::vector<devices::Tensor>{std::move(out)};
}

absl::StatusOr<std::vector<devices::Tensor>> VariableStore::Read(
    std::vector<devices::Tensor> args) const {
  if (args.size() != 2) return BadArgs(kRead, "expected name, shard");
  ASSIGN_OR_RETURN(std::string name, TensorName(args[0]));
  ASSIGN_OR_RETURN(std::vector<int64_t> shard, Ints(args[1], kRead));
  if (shard.size() != 1) return BadArgs(kRead, "expected one shard index");
  absl::MutexLock lock(&mu_);
  auto it = vars_.find(Key{name, shard[0]});
  if (it == vars_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "this ps task has no shard ", shard[0], " of variable \"", name, "\""));
  }
  // A copy made under the lock, so that no update tears it.
  ASSIGN_OR_RETURN(devices::Tensor copy, Copy(it->second.value));
  return std::vector<devices::Tensor>{std::move(copy)};
}

absl::StatusOr<std::vector<devices::Tensor>> VariableStore::Gather(
    std::vector<devices::Tensor> args) const {
  if (args.size() != 3) return BadArgs(kGather, "expected name, shard, rows");
  ASSIGN_OR_RETURN(std::string name, TensorName(args[0]));
  ASSIGN_OR_RETURN(std::vector<int64_t> shard, Ints(args[1], kGather));
  if (shard.size() != 1) return BadArgs(kGather, "expected one shard index");
  ASSIGN_OR_RETURN(std::vector<int64_t> rows, Ints(args[2], kGather));
  absl::MutexLock lock(&mu_);
  auto it = vars_.find(Key{name, shard[0]});
  if (it == vars_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "this ps task has no shard ", shard[0], " of variable \"", name, "\""));
  }
  const devices::Tensor& value = it->second.value;
  if (value.shape().rank() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable \"", name, "\" is a scalar; it has no rows to look up"));
  }
  const int64_t held = value.shape().dim(0);
  std::vector<int64_t> dims(value.shape().dims().begin(),
                            value.shape().dims().end());
  dims[0] = static_cast<int64_t>(rows.size());
  ASSIGN_OR_RETURN(devices::Shape shape, devices::Shape::Make(dims));
  ASSIGN_OR_RETURN(devices::Tensor out,
                   devices::Tensor::Host(value.dtype(), shape));
  const size_t row_bytes =
      held > 0 ? static_cast<size_t>(value.bytes() / held) : 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t r = rows[i];
    if (r < 0 || r >= held) {
      return absl::InvalidArgumentError(
          absl::StrCat("row ", r, " of shard ", shard[0], " of variable \"",
                       name, "\", which has ", held, " rows"));
    }
    if (row_bytes > 0) {
      std::memcpy(static_cast<char*>(out.raw_data()) + i * row_bytes,
                  static_cast<const char*>(value.raw_data()) + r * row_bytes,
                  row_bytes);
    }
  }
  return std::vector<devices::Tensor>{std::move(out)};
}

absl::StatusOr<std::vector<devices::Tensor>> VariableStore::Update(
    std::vector<devices::Tensor> args, UpdateKind kind) {
  const char* function = kind == UpdateKind::kAdd   ? kAssignAdd
                         : kind == UpdateKind::kSub ? kAssignSub
                                                    : kAssign;
  const bool add = kind != UpdateKind::kAssign;
  if (args.size() != 3) return BadArgs(function, "expected name, shard, value");
  ASSIGN_OR_RETURN(std::string name, TensorName(args[0]));
  ASSIGN_OR_RETURN(std::vector<int64_t> shard, Ints(args[1], function));
  if (shard.size() != 1) return BadArgs(function, "expected one shard index");
  absl::MutexLock lock(&mu_);
  auto it = vars_.find(Key{name, shard[0]});
  if (it == vars_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "this ps task has no shard ", shard[0], " of variable \"", name, "\""));
  }
  devices::Tensor& value = it->second.value;
  if (!value.SameShapeAndType(args[2])) {
    return absl::InvalidArgumentError(absl::StrCat(
        add ? "adding " : "assigning ", devices::DTypeName(args[2].dtype()),
        args[2].shape().DebugString(), " to shard ", shard[0],
        " of variable \"", name, "\", which is ",
        devices::DTypeName(value.dtype()), value.shape().DebugString()));
  }
  if (kind == UpdateKind::kAdd) {
    ASSIGN_OR_RETURN(devices::KernelCost added,
                     devices::Add(value, args[2], value));
  } else if (kind == UpdateKind::kSub) {
    ASSIGN_OR_RETURN(devices::KernelCost subtracted,
                     devices::Sub(value, args[2], value));
  } else if (value.bytes() > 0) {
    std::memcpy(value.raw_data(), args[2].raw_data(), value.bytes());
  }
  return std::vector<devices::Tensor>{};
}

PsClient::PsClient(std::vector<std::string> ps_targets, ChannelOptions options,
                   absl::Duration timeout)
    : targets_(std::move(ps_targets)),
      timeout_(timeout),
      client_(std::move(options)) {}

absl::StatusOr<std::vector<devices::Tensor>> PsClient::Call(
    int ps, absl::string_view function,
    const std::vector<devices::Tensor>& args) {
  if (ps < 0 || ps >= static_cast<int>(targets_.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ps task ", ps, " is not one of the ", targets_.size(), " ps tasks"));
  }
  return client_.Call(targets_[static_cast<size_t>(ps)], function, args,
                      timeout_);
}

absl::Status PsClient::CreateShard(absl::string_view name,
                                   const ShardInfo& info,
                                   const devices::Tensor& initial) {
  absl::StatusOr<std::vector<devices::Tensor>> done =
      Call(info.ps, kCreate,
           {NameTensor(name),
            devices::Tensor::FromVector<int64_t>(
                {info.shard, info.num_shards, info.offset}),
            initial});
  absl::MutexLock lock(&mu_);
  shards_.erase(std::string(name));
  return done.status();
}

absl::StatusOr<std::vector<ShardInfo>> PsClient::HeldShards(
    absl::string_view name) {
  std::vector<ShardInfo> shards;
  for (int p = 0; p < static_cast<int>(targets_.size()); ++p) {
    ASSIGN_OR_RETURN(std::vector<devices::Tensor> held,
                     Call(p, kLookup, {NameTensor(name)}));
    if (held.size() != 1 || held[0].dtype() != devices::DType::kInt64 ||
        held[0].shape().rank() != 2 || held[0].shape().dim(1) != 4) {
      return absl::InternalError(
          absl::StrCat("ps task ", targets_[static_cast<size_t>(p)],
                       " answered a look-up of \"", name, "\" malformed"));
    }
    const std::vector<int64_t> rows = held[0].ToVector<int64_t>();
    for (size_t i = 0; i + 3 < rows.size(); i += 4) {
      shards.push_back(
          ShardInfo{p, rows[i], rows[i + 1], rows[i + 2], rows[i + 3]});
    }
  }
  std::sort(
      shards.begin(), shards.end(),
      [](const ShardInfo& a, const ShardInfo& b) { return a.shard < b.shard; });
  return shards;
}

absl::Status PsClient::AssignShard(absl::string_view name,
                                   const ShardInfo& info,
                                   const devices::Tensor& value) {
  return Call(info.ps, kAssign,
              {NameTensor(name),
               devices::Tensor::FromVector<int64_t>({info.shard}), value})
      .status();
}

absl::StatusOr<std::vector<ShardInfo>> PsClient::Lookup(
    absl::string_view name) {
  {
    absl::MutexLock lock(&mu_);
    auto it = shards_.find(name);
    if (it != shards_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(std::vector<ShardInfo> held, HeldShards(name));
  std::vector<ShardInfo> shards = std::move(held);
  if (shards.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no ps task holds a variable \"", name,
        "\": create it first (ParameterServerStrategy::CreateVariable)"));
  }
  int64_t offset = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const ShardInfo& s = shards[i];
    if (s.shard != static_cast<int64_t>(i) ||
        s.num_shards != static_cast<int64_t>(shards.size()) ||
        s.offset != offset) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the ps tasks hold ", shards.size(), " shards of variable \"", name,
          "\", not the ", s.num_shards,
          " it was split into, in order: its creation failed part way (create "
          "it again), or a ps task restarted without its variables (restore "
          "them from a checkpoint: RestoreVariables)"));
    }
    offset += s.rows;
  }
  absl::MutexLock lock(&mu_);
  shards_[std::string(name)] = shards;
  return shards;
}

absl::StatusOr<devices::Tensor> PsClient::Read(absl::string_view name) {
  ASSIGN_OR_RETURN(std::vector<ShardInfo> shards, Lookup(name));
  std::vector<devices::Tensor> parts;
  for (const ShardInfo& s : shards) {
    ASSIGN_OR_RETURN(std::vector<devices::Tensor> part,
                     Call(s.ps, kRead,
                          {NameTensor(name),
                           devices::Tensor::FromVector<int64_t>({s.shard})}));
    if (part.size() != 1) {
      return absl::InternalError(absl::StrCat("reading \"", name, "\" gave ",
                                              part.size(), " tensors"));
    }
    parts.push_back(std::move(part[0]));
  }
  if (parts.size() == 1) return parts[0];
  // Every shard is [rows, trailing...] with the first shard's dtype and
  // trailing dimensions.
  for (size_t k = 0; k < parts.size(); ++k) {
    const devices::Shape& got = parts[k].shape();
    const devices::Shape& first = parts[0].shape();
    bool fits = parts[k].dtype() == parts[0].dtype() && got.rank() >= 1 &&
                got.rank() == first.rank() && got.dim(0) == shards[k].rows;
    for (int i = 1; fits && i < got.rank(); ++i) {
      fits = got.dim(i) == first.dim(i);
    }
    if (!fits) {
      return absl::InternalError(absl::StrCat(
          "shard ", k, " of variable \"", name, "\" is ",
          devices::DTypeName(parts[k].dtype()), got.DebugString(),
          ", which does not continue shard 0 (",
          devices::DTypeName(parts[0].dtype()), first.DebugString(),
          ") with its ", shards[k].rows, " rows"));
    }
  }
  // Concatenate along the first axis: the shards' rows are contiguous.
  std::vector<int64_t> dims(parts[0].shape().dims().begin(),
                            parts[0].shape().dims().end());
  dims[0] = 0;
  for (const devices::Tensor& p : parts) dims[0] += p.shape().dim(0);
  ASSIGN_OR_RETURN(devices::Shape shape, devices::Shape::Make(dims));
  ASSIGN_OR_RETURN(devices::Tensor whole,
                   devices::Tensor::Host(parts[0].dtype(), shape));
  size_t at = 0;
  for (const devices::Tensor& p : parts) {
    if (p.dtype() != whole.dtype() || at + p.bytes() > whole.bytes()) {
      return absl::InternalError(absl::StrCat(
          "the shards of \"", name, "\" differ in dtype or trailing shape"));
    }
    if (p.bytes() > 0) {
      std::memcpy(static_cast<char*>(whole.raw_data()) + at, p.raw_data(),
                  p.bytes());
    }
    at += p.bytes();
  }
  return whole;
}

absl::Status PsClient::Update(absl::string_view name,
                              const devices::Tensor& value, UpdateKind kind) {
  const char* function = kind == UpdateKind::kAdd   ? kAssignAdd
                         : kind == UpdateKind::kSub ? kAssignSub
                                                    : kAssign;
  if (value.num_elements() > 0 &&
      (!value.has_data() || !value.host_accessible())) {
    return absl::InvalidArgumentError(
        absl::StrCat("the update of \"", name,
                     "\" is not in host memory: copy it to the host first"));
  }
  ASSIGN_OR_RETURN(std::vector<ShardInfo> shards, Lookup(name));
  auto send = [&](const ShardInfo& s, const devices::Tensor& piece) {
    return Call(s.ps, function,
                {NameTensor(name),
                 devices::Tensor::FromVector<int64_t>({s.shard}), piece})
        .status();
  };
  if (shards.size() == 1) return send(shards[0], value);
  int64_t total = 0;
  for (const ShardInfo& s : shards) total += s.rows;
  if (value.shape().rank() == 0 || value.shape().dim(0) != total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable \"", name, "\" has ", total, " rows in ", shards.size(),
        " shards; the update's shape is ", value.shape().DebugString()));
  }
  for (const ShardInfo& s : shards) {
    ASSIGN_OR_RETURN(devices::Tensor piece, RowsOf(value, s.offset, s.rows));
    RETURN_IF_ERROR(send(s, piece));
  }
  return absl::OkStatus();
}

absl::Status PsClient::AssignAdd(absl::string_view name,
                                 const devices::Tensor& delta) {
  return Update(name, delta, UpdateKind::kAdd);
}

absl::Status PsClient::AssignSub(absl::string_view name,
                                 const devices::Tensor& delta) {
  return Update(name, delta, UpdateKind::kSub);
}

absl::Status PsClient::Assign(absl::string_view name,
                              const devices::Tensor& value) {
  return Update(name, value, UpdateKind::kAssign);
}

absl::StatusOr<devices::Tensor> PsClient::Gather(absl::string_view name,
                                                 const devices::Tensor& ids) {
  if (ids.dtype() != devices::DType::kInt32 &&
      ids.dtype() != devices::DType::kInt64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ids to look up in \"", name, "\" are ",
        devices::DTypeName(ids.dtype()), "; give int32 or int64 ids"));
  }
  if (ids.num_elements() > 0 && (!ids.has_data() || !ids.host_accessible())) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ids to look up in \"", name,
                     "\" are not in host memory: copy them to the host first"));
  }
  ASSIGN_OR_RETURN(std::vector<ShardInfo> shards, Lookup(name));
  int64_t total = 0;
  for (const ShardInfo& s : shards) total += s.rows;
  // Each id's shard and row there; the ids each shard is asked for.
  const int64_t n = ids.num_elements();
  std::vector<std::vector<int64_t>> local(shards.size());
  std::vector<std::vector<int64_t>> positions(shards.size());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = ids.dtype() == devices::DType::kInt32
                           ? ids.data<int32_t>()[i]
                           : ids.data<int64_t>()[i];
    if (id < 0 || id >= total) {
      return absl::InvalidArgumentError(
          absl::StrCat("id ", id, " (at ", i, ") is not a row of variable \"",
                       name, "\", which has ", total, " rows"));
    }
    // The last shard that starts at or before `id`.
    auto it = std::upper_bound(
        shards.begin(), shards.end(), id,
        [](int64_t v, const ShardInfo& s) { return v < s.offset; });
    const size_t k = static_cast<size_t>(it - shards.begin()) - 1;
    local[k].push_back(id - shards[k].offset);
    positions[k].push_back(i);
  }
  std::optional<devices::Tensor> out;
  size_t row_bytes = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    // Only the shards that hold ids are asked (shard 0, with no rows, for
    // the dtype and row shape when there are no ids).
    if (local[k].empty() && !(n == 0 && k == 0)) continue;
    const ShardInfo& s = shards[k];
    ASSIGN_OR_RETURN(
        std::vector<devices::Tensor> part,
        Call(s.ps, kGather,
             {NameTensor(name), devices::Tensor::FromVector<int64_t>({s.shard}),
              devices::Tensor::FromVector<int64_t>(local[k])}));
    if (part.size() != 1 || part[0].shape().rank() < 1 ||
        part[0].shape().dim(0) != static_cast<int64_t>(local[k].size())) {
      return absl::InternalError(
          absl::StrCat("ps task ", targets_[static_cast<size_t>(s.ps)],
                       " answered a look-up in \"", name, "\" malformed"));
    }
    const devices::Tensor& rows = part[0];
    if (!out.has_value()) {
      std::vector<int64_t> dims(ids.shape().dims().begin(),
                                ids.shape().dims().end());
      dims.insert(dims.end(), rows.shape().dims().begin() + 1,
                  rows.shape().dims().end());
      ASSIGN_OR_RETURN(devices::Shape shape, devices::Shape::Make(dims));
      ASSIGN_OR_RETURN(devices::Tensor made,
                       devices::Tensor::Host(rows.dtype(), shape));
      out = std::move(made);
      row_bytes = n > 0 ? static_cast<size_t>(out->bytes() / n) : 0;
    }
    if (rows.dtype() != out->dtype() ||
        (local[k].size() > 0 &&
         static_cast<size_t>(rows.bytes()) != local[k].size() * row_bytes)) {
      return absl::InternalError(absl::StrCat(
          "the shards of \"", name, "\" differ in dtype or row shape"));
    }
    for (size_t j = 0; j < positions[k].size(); ++j) {
      if (row_bytes == 0) break;
      std::memcpy(static_cast<char*>(out->raw_data()) +
                      static_cast<size_t>(positions[k][j]) * row_bytes,
                  static_cast<const char*>(rows.raw_data()) + j * row_bytes,
                  row_bytes);
    }
  }
  return *std::move(out);
}

}  // namespace ps
}  // namespace distribute

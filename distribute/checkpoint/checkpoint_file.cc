#include "distribute/checkpoint/checkpoint_file.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"
#include "distribute/checkpoint/crc32c.h"
#include "distribute/cluster/json.h"

namespace distribute {
namespace checkpoint {
namespace {

constexpr absl::string_view kMagic("DSTCKPT\n", 8);
constexpr size_t kHeaderSize = 16;
constexpr size_t kFooterSize = 8 + 8 + 4 + 4 + 8;

void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// Reads little-endian fields from a byte range; once a read runs past the
// end, ok() is false and every later read gives 0.
class Reader {
 public:
  explicit Reader(absl::string_view bytes) : bytes_(bytes) {}
  bool ok() const { return ok_; }
  bool done() const { return pos_ == bytes_.size(); }
  uint64_t Fixed(int width) {
    if (!ok_ || bytes_.size() - pos_ < static_cast<size_t>(width)) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < width; ++i) {
      v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[pos_ + i]))
           << (8 * i);
    }
    pos_ += static_cast<size_t>(width);
    return v;
  }
  uint32_t U32() { return static_cast<uint32_t>(Fixed(4)); }
  uint64_t U64() { return Fixed(8); }
  std::string String() {
    const uint32_t n = U32();
    if (!ok_ || bytes_.size() - pos_ < n) {
      ok_ = false;
      return "";
    }
    std::string s(bytes_.substr(pos_, n));
    pos_ += n;
    return s;
  }

 private:
  absl::string_view bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

absl::Status Corrupt(absl::string_view path, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(
      "checkpoint file '", path, "' is corrupt or truncated: ", what,
      "; restore from an earlier checkpoint or delete this one"));
}

}  // namespace

// Fuzzing builds (tools/fuzz) skip the CRC checks, so that mutated files
// reach the checks behind them.
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
constexpr bool kCheckCrcs = false;
#else
constexpr bool kCheckCrcs = true;
#endif

namespace {

// Format version 1 (the files of earlier builds): see the header's
// description of it.
absl::StatusOr<std::vector<CheckpointEntry>> DecodeVersion1(
    absl::string_view bytes, absl::string_view path) {
  if (bytes.size() < kHeaderSize + kFooterSize) {
    return Corrupt(path,
                   absl::StrCat("only ", bytes.size(),
                                " bytes, shorter than a header and footer"));
  }
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    return Corrupt(path, "it does not start with the checkpoint magic");
  }
  if (bytes.substr(bytes.size() - kMagic.size()) != kMagic) {
    return Corrupt(path,
                   "it does not end with the checkpoint magic (truncated?)");
  }
  Reader header(bytes.substr(kMagic.size(), 8));
  const uint32_t version = header.U32();
  if (header.U32() != 0) {
    return Corrupt(path, "the header's reserved field is not zero");
  }
  Reader footer(bytes.substr(bytes.size() - kFooterSize));
  const uint64_t index_offset = footer.U64();
  const uint64_t index_size = footer.U64();
  const uint32_t index_crc = footer.U32();
  const uint32_t footer_version = footer.U32();
  if (version != footer_version) {
    return Corrupt(
        path, absl::StrCat("header version ", version,
                           " differs from footer version ", footer_version));
  }
  if (version != 1) {
    return absl::UnimplementedError(absl::StrCat(
        "checkpoint file '", path, "' has format version ", version,
        "; this build reads versions 1 and ", kCheckpointFormatVersion));
  }
  const uint64_t index_end_limit = bytes.size() - kFooterSize;
  if (index_offset < kHeaderSize || index_offset > index_end_limit ||
      index_size > index_end_limit - index_offset ||
      index_offset + index_size != index_end_limit) {
    return Corrupt(path, "the index location in the footer is out of range");
  }
  const absl::string_view index = bytes.substr(index_offset, index_size);
  if (Crc32c(index) != index_crc && kCheckCrcs) {
    return Corrupt(path, "the index's CRC-32C does not match");
  }
  Reader r(index);
  const uint32_t count = r.U32();
  std::vector<CheckpointEntry> entries;
  std::set<std::string> names;
  // The encoder writes the entries' data back to back from the header on,
  // in index order, and the index right after them: any other layout is
  // not one of its files.
  uint64_t next_offset = kHeaderSize;
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    const std::string name = r.String();
    const std::string dtype_name = r.String();
    const uint32_t rank = r.U32();
    if (!r.ok() || rank > 64) break;
    if (name.empty()) {
      return Corrupt(path, absl::StrCat("entry ", i, " has an empty name"));
    }
    if (name == "__metadata__") {
      // No checkpoint can track it, and the current format reserves it.
      return Corrupt(path, "an entry is named \"__metadata__\"");
    }
    if (!names.insert(name).second) {
      return Corrupt(path, absl::StrCat("entry '", name, "' appears twice"));
    }
    std::vector<int64_t> dims;
    for (uint32_t d = 0; d < rank; ++d)
      dims.push_back(static_cast<int64_t>(r.U64()));
    const uint64_t offset = r.U64();
    const uint64_t size = r.U64();
    const uint32_t crc = r.U32();
    if (!r.ok()) break;
    const std::string entry = absl::StrCat("entry '", name, "'");
    absl::StatusOr<devices::DType> dtype = devices::ParseDType(dtype_name);
    if (!dtype.ok() || devices::DTypeName(*dtype) != dtype_name) {
      return Corrupt(
          path, absl::StrCat(entry, " has unknown dtype '", dtype_name, "'"));
    }
    absl::StatusOr<devices::Shape> shape = devices::Shape::Make(dims);
    if (!shape.ok()) {
      return Corrupt(
          path,
          absl::StrCat(entry, " has a bad shape: ", shape.status().message()));
    }
    // num_elements * dtype size, where it fits in the file (no wrap).
    const uint64_t elements = static_cast<uint64_t>(shape->num_elements());
    const uint64_t element_size = devices::DTypeSize(*dtype);
    const bool fits = element_size == 0 ||
                      elements <= (index_offset - kHeaderSize) / element_size;
    if (!fits || size != elements * element_size || offset != next_offset ||
        size > index_offset - offset) {
      return Corrupt(path,
                     absl::StrCat(entry, " has its data out of range (offset ",
                                  offset, ", ", size, " bytes, ", elements,
                                  " elements of ", dtype_name, ")"));
    }
    next_offset += size;
    const absl::string_view data = bytes.substr(offset, size);
    if (Crc32c(data) != crc && kCheckCrcs) {
      return Corrupt(
          path, absl::StrCat(entry, ": its data's CRC-32C does not match"));
    }
    ASSIGN_OR_RETURN(devices::Tensor value,
                     devices::Tensor::Host(*dtype, *shape));
    if (*dtype == devices::DType::kBool) {
      // A bool is stored as one byte, 0 or 1: any other byte is not a bool.
      for (size_t b = 0; b < data.size(); ++b) {
        if (static_cast<unsigned char>(data[b]) > 1) {
          return Corrupt(
              path,
              absl::StrCat(entry, " holds byte ", static_cast<int>(data[b]),
                           " at element ", b, ", not a bool (0 or 1)"));
        }
      }
    }
    if (size > 0) std::memcpy(value.raw_data(), data.data(), size);
    entries.push_back({name, std::move(value)});
  }
  if (!r.ok() || !r.done() || entries.size() != count) {
    return Corrupt(path, "the index does not parse");
  }
  if (next_offset != index_offset) {
    return Corrupt(
        path, absl::StrCat("the index starts at ", index_offset,
                           " but the entries' data ends at ", next_offset));
  }
  return entries;
}

// --- Format version 2: safetensors -----------------------------------------

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // safetensors' own bound
constexpr absl::string_view kMarkerKey = "distsim";
constexpr absl::string_view kMarkerValue = "checkpoint 2";
constexpr absl::string_view kCrcPrefix = "crc32c:";

// safetensors' dtype names.
absl::string_view SafetensorsDType(devices::DType dtype) {
  switch (dtype) {
    case devices::DType::kFloat32:
      return "F32";
    case devices::DType::kFloat64:
      return "F64";
    case devices::DType::kFloat16:
      return "F16";
    case devices::DType::kBFloat16:
      return "BF16";
    case devices::DType::kInt32:
      return "I32";
    case devices::DType::kInt64:
      return "I64";
    case devices::DType::kUInt8:
      return "U8";
    case devices::DType::kBool:
      return "BOOL";
  }
  return "";
}

std::optional<devices::DType> FromSafetensorsDType(absl::string_view name) {
  for (devices::DType d : devices::kAllDTypes) {
    if (SafetensorsDType(d) == name) return d;
  }
  return std::nullopt;
}

std::string CrcHex(uint32_t crc) { return absl::StrFormat("%08x", crc); }

uint32_t DataCrc(absl::string_view data) {
  return data.empty() ? Crc32c("") : Crc32cExtend(0, data.data(), data.size());
}

// A non-negative integer member of a JSON array, or nullopt.
std::optional<uint64_t> Unsigned(const cluster::Json& v) {
  std::optional<int64_t> i = cluster::JsonInt(v);
  if (!i.has_value() || *i < 0) return std::nullopt;
  return static_cast<uint64_t>(*i);
}

absl::StatusOr<std::vector<CheckpointEntry>> DecodeSafetensors(
    absl::string_view bytes, absl::string_view path) {
  if (bytes.size() < 8) {
    return Corrupt(path, absl::StrCat("only ", bytes.size(),
                                      " bytes, shorter than the header size"));
  }
  Reader size_reader(bytes.substr(0, 8));
  const uint64_t header_size = size_reader.U64();
  if (header_size > kMaxHeaderBytes || header_size > bytes.size() - 8) {
    return Corrupt(
        path, absl::StrCat("it has no version-1 magic, and as a safetensors "
                           "file its header of ",
                           header_size, " bytes does not fit in its ",
                           bytes.size(), " (truncated?)"));
  }
  const absl::string_view header_text = bytes.substr(8, header_size);
  if (header_text.empty() || header_text.front() != '{') {
    return Corrupt(path,
                   "it is neither a checkpoint of this library nor a "
                   "safetensors file (no magic, no JSON header)");
  }
  absl::StatusOr<cluster::Json> header = cluster::ParseJson(header_text);
  if (!header.ok()) {
    return Corrupt(path, absl::StrCat("its safetensors header: ",
                                      header.status().message()));
  }
  if (!header->is_object()) {
    return Corrupt(path, "its safetensors header is not a JSON object");
  }
  const absl::string_view data = bytes.substr(8 + header_size);

  // Our own files carry a marker and every entry's CRC-32C; other
  // safetensors files (Python's) may carry any string metadata.
  std::map<std::string, std::string> metadata;
  if (const cluster::Json* m = cluster::JsonMember(*header, "__metadata__")) {
    if (!m->is_object()) {
      return Corrupt(path, "its __metadata__ is not a JSON object");
    }
    for (auto it = m->begin(); it != m->end(); ++it) {
      if (!it.value().is_string()) {
        return Corrupt(
            path, absl::StrCat("metadata \"", it.key(), "\" is not a string"));
      }
      metadata[it.key()] = it.value().get<std::string>();
    }
  }
  bool ours = metadata.count(std::string(kMarkerKey)) > 0;
  for (const auto& [key, value] : metadata) {
    if (absl::StartsWith(key, kCrcPrefix)) ours = true;
  }
  if (ours && metadata[std::string(kMarkerKey)] != kMarkerValue) {
    return Corrupt(path, absl::StrCat("its metadata \"", kMarkerKey,
                                      "\" is not \"", kMarkerValue, "\""));
  }

  struct Placed {
    uint64_t begin = 0, end = 0;
    size_t entry = 0;
  };
  std::vector<CheckpointEntry> entries;
  std::vector<Placed> placed;
  size_t crcs = 0;
  for (auto member = header->begin(); member != header->end(); ++member) {
    const std::string& name = member.key();
    const cluster::Json& spec = member.value();
    if (name == "__metadata__") continue;
    const std::string entry = absl::StrCat("entry '", name, "'");
    if (name.empty()) return Corrupt(path, "an entry has an empty name");
    if (!spec.is_object() || spec.size() != 3) {
      return Corrupt(path, absl::StrCat(entry,
                                        " is not {dtype, shape, "
                                        "data_offsets}"));
    }
    const cluster::Json* dtype_name = cluster::JsonMember(spec, "dtype");
    const cluster::Json* shape_json = cluster::JsonMember(spec, "shape");
    const cluster::Json* offsets = cluster::JsonMember(spec, "data_offsets");
    if (dtype_name == nullptr || shape_json == nullptr || offsets == nullptr ||
        !dtype_name->is_string() || !shape_json->is_array() ||
        !offsets->is_array() || offsets->size() != 2) {
      return Corrupt(path, absl::StrCat(entry,
                                        " is not {dtype, shape, "
                                        "data_offsets}"));
    }
    std::optional<devices::DType> dtype =
        FromSafetensorsDType(dtype_name->get_ref<const std::string&>());
    if (!dtype.has_value()) {
      return Corrupt(path,
                     absl::StrCat(entry, " has dtype \"",
                                  dtype_name->get_ref<const std::string&>(),
                                  "\", which this library does not "
                                  "hold (F32, F64, F16, BF16, I32, I64, "
                                  "U8, BOOL)"));
    }
    // The element count, bounded by the data's size (no overflow).
    std::vector<int64_t> dims;
    uint64_t elements = 1;
    const uint64_t element_size = devices::DTypeSize(*dtype);
    const uint64_t max_elements = data.size() / element_size;
    bool fits = shape_json->size() <= 64;
    for (const cluster::Json& d : *shape_json) {
      std::optional<uint64_t> dim = Unsigned(d);
      if (!dim.has_value() || *dim > static_cast<uint64_t>(INT64_MAX)) {
        fits = false;
        break;
      }
      dims.push_back(static_cast<int64_t>(*dim));
      if (elements != 0 && *dim > max_elements / elements) {
        // Larger than the data, unless another dimension is 0.
        elements = max_elements + 1;
      } else {
        elements = elements == 0 ? 0 : elements * *dim;
      }
    }
    for (int64_t d : dims) {
      if (d == 0) elements = 0;
    }
    std::optional<uint64_t> begin = Unsigned((*offsets)[0]);
    std::optional<uint64_t> end = Unsigned((*offsets)[1]);
    if (!fits || elements > max_elements || !begin.has_value() ||
        !end.has_value() || *begin > *end || *end > data.size() ||
        *end - *begin != elements * element_size) {
      return Corrupt(path, absl::StrCat(entry, " has its data out of range"));
    }
    absl::StatusOr<devices::Shape> shape = devices::Shape::Make(dims);
    if (!shape.ok()) {
      return Corrupt(
          path,
          absl::StrCat(entry, " has a bad shape: ", shape.status().message()));
    }
    const absl::string_view bytes_of = data.substr(*begin, *end - *begin);
    auto crc = metadata.find(absl::StrCat(kCrcPrefix, name));
    if (crc != metadata.end()) {
      ++crcs;
      if (crc->second.size() != 8 ||
          (kCheckCrcs && crc->second != CrcHex(DataCrc(bytes_of)))) {
        return Corrupt(path, absl::StrCat(entry,
                                          ": its data's CRC-32C does not "
                                          "match"));
      }
    } else if (ours) {
      return Corrupt(path, absl::StrCat(entry, " has no CRC-32C"));
    }
    if (*dtype == devices::DType::kBool) {
      for (size_t b = 0; b < bytes_of.size(); ++b) {
        if (static_cast<unsigned char>(bytes_of[b]) > 1) {
          return Corrupt(
              path,
              absl::StrCat(entry, " holds byte ", static_cast<int>(bytes_of[b]),
                           " at element ", b, ", not a bool (0 or 1)"));
        }
      }
    }
    ASSIGN_OR_RETURN(devices::Tensor value,
                     devices::Tensor::Host(*dtype, *shape));
    if (!bytes_of.empty()) {
      std::memcpy(value.raw_data(), bytes_of.data(), bytes_of.size());
    }
    placed.push_back({*begin, *end, entries.size()});
    entries.push_back({name, std::move(value)});
  }
  // Every metadata CRC names an entry, and only ours are kept.
  size_t crc_keys = 0;
  for (const auto& [key, value] : metadata) {
    if (absl::StartsWith(key, kCrcPrefix)) {
      ++crc_keys;
    } else if (ours && key != kMarkerKey) {
      return Corrupt(path, absl::StrCat("unknown metadata \"", key, "\""));
    }
  }
  if (crc_keys != crcs) {
    return Corrupt(path, "a metadata CRC-32C names no entry");
  }
  // The entries' data tiles the data section: no gap, no overlap, nothing
  // after (safetensors' rule).
  std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t next = 0;
  for (const Placed& p : placed) {
    if (p.begin != next) {
      return Corrupt(path, absl::StrCat("entry '", entries[p.entry].name,
                                        "' starts at data byte ", p.begin,
                                        " where ", next, " was expected"));
    }
    next = p.end;
  }
  if (next != data.size()) {
    return Corrupt(path, absl::StrCat("the entries' data ends at byte ", next,
                                      " of ", data.size()));
  }
  return entries;
}

}  // namespace

absl::StatusOr<std::string> EncodeCheckpoint(
    const std::vector<CheckpointEntry>& entries) {
  std::set<std::string> names;
  for (const CheckpointEntry& e : entries) {
    if (e.name.empty()) {
      return absl::InvalidArgumentError(
          "a checkpoint entry needs a non-empty name");
    }
    if (e.name == "__metadata__") {
      return absl::InvalidArgumentError(
          "\"__metadata__\" is reserved by the file format; name the entry "
          "otherwise");
    }
    if (!names.insert(e.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint entry '", e.name,
                       "' is given twice; names must be unique"));
    }
    if (!e.value.host_accessible() && e.value.bytes() > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint entry '", e.name, "' (", e.value.DebugString(),
          ") has no host data; copy it to the host before saving"));
    }
  }
  auto data_of = [](const CheckpointEntry& e) {
    return e.value.bytes() > 0
               ? absl::string_view(static_cast<const char*>(e.value.raw_data()),
                                   e.value.bytes())
               : absl::string_view();
  };
  cluster::Json header = cluster::Json::object();
  cluster::Json& metadata = header["__metadata__"];
  metadata[std::string(kMarkerKey)] = std::string(kMarkerValue);
  for (const CheckpointEntry& e : entries) {
    metadata[absl::StrCat(kCrcPrefix, e.name)] = CrcHex(DataCrc(data_of(e)));
  }
  uint64_t offset = 0;
  for (const CheckpointEntry& e : entries) {
    const uint64_t size = e.value.bytes();
    header[e.name] = {{"dtype", std::string(SafetensorsDType(e.value.dtype()))},
                      {"shape", e.value.shape().dims()},
                      {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string header_text;
  try {
    header_text = header.dump();
  } catch (const cluster::Json::exception&) {
    return absl::InvalidArgumentError(
        "checkpoint entry names must be valid UTF-8 (safetensors headers are "
        "JSON); rename the entry whose name is not");
  }
  // The data starts 8-byte aligned, as safetensors pads its header.
  while ((8 + header_text.size()) % 8 != 0) header_text += ' ';
  std::string out;
  PutU64(out, header_text.size());
  out += header_text;
  for (const CheckpointEntry& e : entries) {
    const absl::string_view d = data_of(e);
    out.append(d.data(), d.size());
  }
  return out;
}

absl::StatusOr<std::vector<CheckpointEntry>> DecodeCheckpoint(
    absl::string_view bytes, absl::string_view path) {
  if (absl::StartsWith(bytes, kMagic)) return DecodeVersion1(bytes, path);
  return DecodeSafetensors(bytes, path);
}

}  // namespace checkpoint
}  // namespace distribute

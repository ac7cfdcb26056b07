// Source datasets: Tensor, TensorSlice, Generator, Range and the file
// reader.

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"
#include "distribute/input/dataset_node.h"
#include "distribute/input/element.h"

namespace distribute {
namespace data {
namespace internal {
namespace {

// --- Tensor (from_tensors) ------------------------------------------------

class TensorsNode : public DatasetNode {
 public:
  explicit TensorsNode(Element element) : element_(std::move(element)) {}
  std::string op() const override { return "Tensor"; }
  absl::StatusOr<ElementSpec> ComputeSpec() const override {
    return SpecOf(element_);
  }
  std::string Describe() const override {
    return absl::StrCat("Tensor", ElementDebugString(element_));
  }
  int64_t Cardinality() const override { return 1; }
  ShardRole shard_role() const override {
    return ShardRole::kUnshardableSource;
  }
  std::vector<Dataset> inputs() const override { return {}; }
  NodePtr WithInputs(std::vector<Dataset> /*inputs*/) const override {
    return std::make_shared<TensorsNode>(element_);
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t /*key*/) const override {
    class It : public Iterator {
     public:
      explicit It(std::shared_ptr<const TensorsNode> node)
          : node_(std::move(node)) {}
      absl::StatusOr<std::optional<Element>> GetNext() override {
        if (done_) return std::nullopt;
        done_ = true;
        return node_->element_;
      }

     private:
      const std::shared_ptr<const TensorsNode> node_;
      bool done_ = false;
    };
    return std::make_unique<It>(SharedAs<TensorsNode>());
  }

 private:
  const Element element_;
};

// --- TensorSlice (from_tensor_slices) -------------------------------------

class TensorSlicesNode : public DatasetNode {
 public:
  TensorSlicesNode(Element components, int64_t rows)
      : components_(std::move(components)), rows_(rows) {}
  std::string op() const override { return "TensorSlice"; }
  absl::StatusOr<ElementSpec> ComputeSpec() const override {
    ElementSpec spec = SpecOf(components_);
    for (TensorSpec& t : spec) {
      t = TensorSpec(t.dtype(), t.dims().subspan(1));  // a row's
    }
    return spec;
  }
  std::string Describe() const override {
    return absl::StrCat("TensorSlice", ElementDebugString(components_));
  }
  int64_t Cardinality() const override { return rows_; }
  ShardRole shard_role() const override {
    return ShardRole::kUnshardableSource;
  }
  std::vector<Dataset> inputs() const override { return {}; }
  NodePtr WithInputs(std::vector<Dataset> /*inputs*/) const override {
    return std::make_shared<TensorSlicesNode>(components_, rows_);
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t /*key*/) const override {
    class It : public Iterator {
     public:
      explicit It(std::shared_ptr<const TensorSlicesNode> node)
          : node_(std::move(node)) {}
      absl::StatusOr<std::optional<Element>> GetNext() override {
        if (row_ >= node_->rows_) return std::nullopt;
        ASSIGN_OR_RETURN(Element row, UnstackRow(node_->components_, row_++));
        return std::optional<Element>(std::move(row));
      }

     private:
      const std::shared_ptr<const TensorSlicesNode> node_;
      int64_t row_ = 0;
    };
    return std::make_unique<It>(SharedAs<TensorSlicesNode>());
  }

 private:
  const Element components_;
  const int64_t rows_;
};

// --- Generator (from_generator) -------------------------------------------

class GeneratorNode : public DatasetNode {
 public:
  GeneratorNode(Dataset::GeneratorFn fn, int64_t cardinality)
      : fn_(std::move(fn)), cardinality_(cardinality) {}
  std::string op() const override { return "Generator"; }
  std::string Describe() const override { return "Generator"; }
  int64_t Cardinality() const override { return cardinality_; }
  ShardRole shard_role() const override {
    return ShardRole::kUnshardableSource;
  }
  std::vector<Dataset> inputs() const override { return {}; }
  NodePtr WithInputs(std::vector<Dataset> /*inputs*/) const override {
    return std::make_shared<GeneratorNode>(fn_, cardinality_);
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t /*key*/) const override {
    class It : public Iterator {
     public:
      explicit It(std::shared_ptr<const GeneratorNode> node)
          : node_(std::move(node)) {}
      absl::StatusOr<std::optional<Element>> GetNext() override {
        if (done_) return std::nullopt;
        absl::StatusOr<std::optional<Element>> next = node_->fn_(index_++);
        if (next.ok() && !next->has_value()) done_ = true;
        return next;
      }

     private:
      const std::shared_ptr<const GeneratorNode> node_;
      int64_t index_ = 0;
      bool done_ = false;
    };
    return std::make_unique<It>(SharedAs<GeneratorNode>());
  }

 private:
  const Dataset::GeneratorFn fn_;
  const int64_t cardinality_;
};

// --- Range ------------------------------------------------------------------

class RangeNode : public DatasetNode {
 public:
  RangeNode(int64_t start, int64_t stop, int64_t step)
      : start_(start), stop_(stop), step_(step) {}
  std::string op() const override { return "Range"; }
  absl::StatusOr<ElementSpec> ComputeSpec() const override {
    return ElementSpec{TensorSpec(devices::DType::kInt64, {})};
  }
  std::string Describe() const override {
    return absl::StrCat("Range(", start_, ", ", stop_, ", ", step_, ")");
  }
  int64_t Cardinality() const override {
    // Differences in uint64_t: exact for any int64 start < stop.
    if (step_ > 0) {
      if (start_ >= stop_) return 0;
      const uint64_t span =
          static_cast<uint64_t>(stop_) - static_cast<uint64_t>(start_);
      return static_cast<int64_t>((span - 1) / static_cast<uint64_t>(step_) +
                                  1);
    }
    if (start_ <= stop_) return 0;
    const uint64_t span =
        static_cast<uint64_t>(start_) - static_cast<uint64_t>(stop_);
    const uint64_t stride = 0 - static_cast<uint64_t>(step_);
    return static_cast<int64_t>((span - 1) / stride + 1);
  }
  ShardRole shard_role() const override {
    return ShardRole::kUnshardableSource;
  }
  std::vector<Dataset> inputs() const override { return {}; }
  NodePtr WithInputs(std::vector<Dataset> /*inputs*/) const override {
    return std::make_shared<RangeNode>(start_, stop_, step_);
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t /*key*/) const override {
    class It : public Iterator {
     public:
      explicit It(std::shared_ptr<const RangeNode> node)
          : node_(std::move(node)), count_(node_->Cardinality()) {}
      absl::StatusOr<std::optional<Element>> GetNext() override {
        if (i_ >= count_) return std::nullopt;
        const int64_t value = static_cast<int64_t>(
            static_cast<uint64_t>(node_->start_) +
            static_cast<uint64_t>(i_) * static_cast<uint64_t>(node_->step_));
        ++i_;
        ASSIGN_OR_RETURN(
            devices::Tensor t,
            devices::Tensor::FromVector<int64_t>({value}, devices::Shape()));
        return std::optional<Element>(Element{std::move(t)});
      }

     private:
      const std::shared_ptr<const RangeNode> node_;
      const int64_t count_;
      int64_t i_ = 0;
    };
    return std::make_unique<It>(SharedAs<RangeNode>());
  }

 private:
  const int64_t start_, stop_, step_;
};

// --- Reader (FromFiles) -----------------------------------------------------

class ReaderNode : public DatasetNode {
 public:
  ReaderNode(std::vector<std::string> files, Dataset::ReaderFn reader)
      : files_(std::move(files)), reader_(std::move(reader)) {}
  std::string op() const override { return "Reader"; }
  std::string Describe() const override {
    return absl::StrCat("Reader(", absl::StrJoin(files_, ", "), ")");
  }
  int64_t Cardinality() const override {
    return files_.empty() ? 0 : kUnknownCardinality;
  }
  ShardRole shard_role() const override { return ShardRole::kReader; }
  std::vector<Dataset> inputs() const override { return {}; }
  NodePtr WithInputs(std::vector<Dataset> /*inputs*/) const override {
    return std::make_shared<ReaderNode>(files_, reader_);
  }
  absl::StatusOr<NodePtr> ShardFiles(int64_t num_shards,
                                     int64_t index) const override {
    const int64_t num_files = static_cast<int64_t>(files_.size());
    if (num_files < num_shards) {
      return absl::InvalidArgumentError(
          NotEnoughElementsForShardsMessage(num_files, num_shards));
    }
    std::vector<std::string> mine;
    for (int64_t i = index; i < num_files; i += num_shards) {
      mine.push_back(files_[static_cast<size_t>(i)]);
    }
    return NodePtr(std::make_shared<ReaderNode>(std::move(mine), reader_));
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t key) const override {
    class It : public Iterator {
     public:
      It(std::shared_ptr<const ReaderNode> node, uint64_t key)
          : node_(std::move(node)), key_(key) {}
      absl::StatusOr<std::optional<Element>> GetNext() override {
        while (true) {
          if (current_ == nullptr) {
            if (next_file_ >= node_->files_.size()) return std::nullopt;
            const std::string& file = node_->files_[next_file_++];
            absl::StatusOr<Dataset> records = node_->reader_(file);
            if (!records.ok()) {
              return absl::Status(records.status().code(),
                                  absl::StrCat("reading ", file, ": ",
                                               records.status().message()));
            }
            current_ = records->MakeIterator(static_cast<int64_t>(key_));
          }
          absl::StatusOr<std::optional<Element>> next = current_->GetNext();
          if (!next.ok() || next->has_value()) return next;
          current_.reset();
        }
      }

     private:
      const std::shared_ptr<const ReaderNode> node_;
      const uint64_t key_;
      size_t next_file_ = 0;
      std::unique_ptr<Iterator> current_;
    };
    return std::make_unique<It>(SharedAs<ReaderNode>(), key);
  }

 private:
  const std::vector<std::string> files_;
  const Dataset::ReaderFn reader_;
};

}  // namespace

NodePtr MakeTensorsNode(Element element) {
  return std::make_shared<TensorsNode>(std::move(element));
}
NodePtr MakeTensorSlicesNode(Element components, int64_t rows) {
  return std::make_shared<TensorSlicesNode>(std::move(components), rows);
}
NodePtr MakeGeneratorNode(Dataset::GeneratorFn fn, int64_t cardinality) {
  return std::make_shared<GeneratorNode>(std::move(fn), cardinality);
}
NodePtr MakeRangeNode(int64_t start, int64_t stop, int64_t step) {
  return std::make_shared<RangeNode>(start, stop, step);
}
NodePtr MakeReaderNode(std::vector<std::string> files,
                       Dataset::ReaderFn reader) {
  return std::make_shared<ReaderNode>(std::move(files), std::move(reader));
}

}  // namespace internal
}  // namespace data
}  // namespace distribute

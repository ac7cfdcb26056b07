// Checkpoint: saves and restores named training state, in the spirit of
// tf.train.Checkpoint: strategy variables (plain, mirrored, sync-on-read),
// plain tensors (optimizer slots such as SGD's momentum or Adam's m and v,
// restored in place because Tensor copies share their buffer) and int64
// counters (the training step, Adam's iteration count). Files are written
// atomically (checkpoint_file.h for the format, file_util.h for the steps).
//
//   Checkpoint ckpt = *Checkpoint::ForStrategy(*strategy);
//   ckpt.TrackVariable("dense/kernel", kernel);       // shared_ptr<Variable>
//   ckpt.TrackTensor("dense/kernel/momentum", slot);  // shares the buffer
//   ckpt.TrackInt64("step", &step);
//   std::string path = *ckpt.Save("/ckpt/ckpt");      // "/ckpt/ckpt-1"
//   ...
//   absl::Status s = ckpt.Restore(path);  // values, step and save_counter
//
// What is saved (TF's rules): a mirrored or plain variable's value (its
// first component: they are equal); a sync-on-read variable's aggregated
// value (the cross-replica read: SUM / MEAN over every replica, a collective
// under a multi-worker strategy, or the first replica's). Restoring assigns
// the saved value to every component, except that a SUM sync-on-read
// variable gets value / NumReplicasInSync() per component, so that its sum
// is preserved (TF's values_util.get_on_read_restore_ops).
//
// Multi-worker (TF's write_dirpath pattern): every worker calls Save, in the
// same order (a sync-on-read read is a collective). The chief writes to the
// real path; the others write the same file under
// "<dir>/workertemp_<task_id>/" and delete that directory afterwards. Every
// worker restores from the real path. A Checkpoint is used by one thread at
// a time.
#ifndef DISTRIBUTE_CHECKPOINT_CHECKPOINT_H_
#define DISTRIBUTE_CHECKPOINT_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "devices/tensor.h"
#include "distribute/checkpoint/checkpoint_file.h"
#include "distribute/checkpoint/file_util.h"
#include "distribute/strategy.h"
#include "distribute/variables.h"

namespace distribute {
namespace checkpoint {

// Who writes the real files. The chief is (TF's multi_worker_util.is_chief)
// the "chief" task, else worker 0 of a cluster without a chief, else any
// process without a cluster.
struct WriterRole {
  bool is_chief = true;
  int64_t task_id = 0;

  // The role of this process in `strategy`'s cluster (chief without one).
  // INVALID_ARGUMENT when the cluster resolver cannot name this task.
  static absl::StatusOr<WriterRole> ForStrategy(const Strategy& strategy);
};

// Where a worker with `role` writes what belongs in `dir`: `dir` for the
// chief, "<dir>/workertemp_<task_id>" for the others.
std::string WriteDirectory(const std::string& dir, const WriterRole& role);

struct CheckpointOptions {
  WriterRole role;
  // Test seam: simulated crashes at the save's steps (see file_util.h).
  SaveFaultHook fault_hook;
};

class Checkpoint {
 public:
  // The entry holding save_counter; tracked names may not use it.
  static constexpr absl::string_view kSaveCounterName = "save_counter";

  explicit Checkpoint(CheckpointOptions options = {})
      : options_(std::move(options)) {}
  // A checkpoint whose role is WriterRole::ForStrategy(strategy).
  static absl::StatusOr<Checkpoint> ForStrategy(const Strategy& strategy,
                                                SaveFaultHook fault_hook = {});
  Checkpoint(Checkpoint&&) = default;
  Checkpoint& operator=(Checkpoint&&) = default;
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  // Adds an object under `name`. INVALID_ARGUMENT for an empty name, a name
  // already tracked, "save_counter" or "__metadata__" (reserved), a null
  // pointer or a tensor without host data; FAILED_PRECONDITION for a
  // variable on parameter servers (Variable::Kind::kRemote), which
  // ps::SaveVariables checkpoints.
  absl::Status TrackVariable(const std::string& name,
                             std::shared_ptr<Variable> variable);
  absl::Status TrackTensor(const std::string& name, devices::Tensor tensor);
  // `value` must outlive this Checkpoint.
  absl::Status TrackInt64(const std::string& name, int64_t* value);

  // The tracked names, sorted.
  std::vector<std::string> tracked_names() const;

  // How many times Save has been called (restored by Restore).
  int64_t save_counter() const { return save_counter_; }

  // Increments save_counter and writes "<prefix>-<save_counter>"; returns
  // that path. Creates the prefix's directory. Errors: FAILED_PRECONDITION
  // for a variable whose value cannot be read (no host data, a sync-on-read
  // variable with aggregation NONE) naming it; UNAVAILABLE for I/O; the
  // fault hook's status. On an error save_counter is unchanged.
  absl::StatusOr<std::string> Save(const std::string& prefix);

  // Writes the tracked objects (and save_counter) to exactly `path`, without
  // changing save_counter (tf.train.Checkpoint.write).
  absl::StatusOr<std::string> Write(const std::string& path);

  // Restores every tracked object and save_counter from `path`. Everything
  // is checked before anything is assigned, so on an error nothing changed:
  // NOT_FOUND for a missing file or a tracked name the file lacks;
  // DATA_LOSS for a corrupt or truncated file (naming file and entry);
  // INVALID_ARGUMENT for a dtype or shape that differs from the tracked
  // object's (naming it); FAILED_PRECONDITION for a component without host
  // data. Entries the file has and nothing tracks are ignored.
  absl::Status Restore(const std::string& path);
  // Restore without touching save_counter (tf.train.Checkpoint.read).
  absl::Status Read(const std::string& path);

  const CheckpointOptions& options() const { return options_; }

 private:
  friend class CheckpointManager;

  struct Tracked {
    std::shared_ptr<Variable> variable;  // one of these three
    devices::Tensor tensor;
    bool is_tensor = false;
    int64_t* int64 = nullptr;
  };

  absl::Status CheckNewName(const std::string& name) const;
  // Host copies of every tracked value and of save_counter = `counter`.
  absl::StatusOr<std::vector<CheckpointEntry>> Snapshot(int64_t counter) const;
  // Writes `entries` where this worker writes `path`; non-chiefs remove
  // their temporary directory afterwards.
  absl::Status WriteEntries(const std::string& path,
                            const std::vector<CheckpointEntry>& entries) const;
  absl::Status RestoreFrom(const std::string& path, bool with_counter);

  CheckpointOptions options_;
  std::map<std::string, Tracked> tracked_;
  int64_t save_counter_ = 0;
};

// A host copy of one entry of the checkpoint at `path`
// (tf.train.load_variable). NOT_FOUND for a missing file or name;
// DATA_LOSS for a corrupt file.
absl::StatusOr<devices::Tensor> LoadEntry(const std::string& path,
                                          const std::string& name);
// The entries' names, dtypes and shapes (tf.train.list_variables), as
// (name, "float32[2,3]") pairs sorted by name.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ListEntries(
    const std::string& path);

}  // namespace checkpoint
}  // namespace distribute

#endif  // DISTRIBUTE_CHECKPOINT_CHECKPOINT_H_

// Checkpoints of the ps tasks' variables, saved and restored from the
// coordinator in the format of distribute/checkpoint (checkpoint_file.h;
// tf.train.load_variable's LoadEntry reads them), written atomically.
//
// Restoring brings back a cluster in any state: variables the ps tasks
// hold get the saved values; variables no task has are created (placed as
// new ones); and where a ps task restarted without its variables, the
// shards it lost are created again where they were (a variable's shards sit
// on consecutive ps tasks, so the surviving ones tell where) and the others
// get the saved values.
//
// Example (coordinator):
//   absl::Status s = distribute::ps::SaveVariables(
//       strategy->client(), {"w", "b"}, "/ckpt/ps-100");
//   ... a ps task is replaced ...
//   s = distribute::ps::RestoreVariables(*strategy, "/ckpt/ps-100");
#ifndef DISTRIBUTE_PS_PS_CHECKPOINT_H_
#define DISTRIBUTE_PS_PS_CHECKPOINT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "distribute/ps/parameter_server_strategy.h"
#include "distribute/ps/ps_client.h"

namespace distribute {
namespace ps {

// Reads every variable of `names` whole and writes them to `path`. The
// errors of PsClient::Read (NOT_FOUND for an unknown variable) and
// UNAVAILABLE for I/O; INVALID_ARGUMENT for a name given twice. Updates
// made while it reads may be in some variables and not others (as TF's
// checkpoints of ps variables during training).
absl::Status SaveVariables(PsClient& ps, const std::vector<std::string>& names,
                           const std::string& path);

// Restores every variable of the checkpoint at `path` (see the file
// comment). NOT_FOUND for a missing file; DATA_LOSS for a corrupt one;
// INVALID_ARGUMENT when a variable on the ps tasks has another dtype or
// shape than the saved one; FAILED_PRECONDITION when the surviving shards do
// not fit the saved variable; the errors of the calls.
absl::Status RestoreVariables(ParameterServerStrategy& strategy,
                              const std::string& path);

}  // namespace ps
}  // namespace distribute

#endif  // DISTRIBUTE_PS_PS_CHECKPOINT_H_

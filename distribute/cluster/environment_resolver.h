// The cluster resolver of a worker process, chosen from how it was
// launched: TF_CONFIG (tf.distribute's convention, set by the launcher for
// each process) or a Slurm job step (srun sets SLURM_PROCID and the step's
// variables). A program that takes --cluster_resolver=auto runs unchanged
// under either launcher.
//
// Example (inside `srun -N2 --ntasks-per-node=1 trainer`):
//   auto kind = cluster::ParseResolverKind("auto");
//   cluster::SlurmClusterResolverOptions slurm;
//   slurm.gpus_per_node = 0;  // CPU-only nodes
//   auto resolver = cluster::ResolverFromEnvironment(*kind, slurm);
//   // A SlurmClusterResolver: worker tasks at <node>:8888.
#ifndef DISTRIBUTE_CLUSTER_ENVIRONMENT_RESOLVER_H_
#define DISTRIBUTE_CLUSTER_ENVIRONMENT_RESOLVER_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distribute/cluster/cluster_resolver.h"
#include "distribute/cluster/env.h"
#include "distribute/cluster/slurm_cluster_resolver.h"

namespace distribute {
namespace cluster {

enum class ResolverKind {
  kAuto,      // TF_CONFIG when it is set, else Slurm inside a Slurm step.
  kTfConfig,  // TFConfigClusterResolver.
  kSlurm,     // SlurmClusterResolver.
};

// "auto", "tf_config" or "slurm"; INVALID_ARGUMENT naming the choices.
absl::StatusOr<ResolverKind> ParseResolverKind(absl::string_view name);
absl::string_view ResolverKindName(ResolverKind kind);

// The resolver `kind` selects in `env`, or nullopt when it finds no cluster
// there: kTfConfig needs a non-empty TF_CONFIG, kSlurm needs SLURM_PROCID,
// and kAuto takes TF_CONFIG when set, else Slurm inside a job step
// (SLURM_PROCID and SLURM_STEP_NUM_TASKS, which srun sets; an sbatch
// script has SLURM_PROCID alone and is no cluster).
std::optional<ResolverKind> DetectCluster(ResolverKind kind,
                                          const EnvLookup& env = ProcessEnv());

// The resolver DetectCluster chooses, made from `env` (Slurm with `slurm`'s
// options). With no cluster in `env` (DetectCluster is nullopt): a
// TFConfigClusterResolver with an empty cluster for kAuto and kTfConfig (the
// process trains alone, as TF does), and FAILED_PRECONDITION naming
// SLURM_PROCID for kSlurm. Errors are the resolvers': INVALID_ARGUMENT
// naming the bad TF_CONFIG field or Slurm variable.
absl::StatusOr<std::unique_ptr<ClusterResolver>> ResolverFromEnvironment(
    ResolverKind kind, SlurmClusterResolverOptions slurm = {},
    const EnvLookup& env = ProcessEnv());

}  // namespace cluster
}  // namespace distribute

#endif  // DISTRIBUTE_CLUSTER_ENVIRONMENT_RESOLVER_H_

#include "distribute/cluster/environment_resolver.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/cluster/tf_config_cluster_resolver.h"

namespace distribute {
namespace cluster {

absl::StatusOr<ResolverKind> ParseResolverKind(absl::string_view name) {
  for (ResolverKind kind :
       {ResolverKind::kAuto, ResolverKind::kTfConfig, ResolverKind::kSlurm}) {
    if (name == ResolverKindName(kind)) return kind;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown cluster resolver \"", name,
      "\"; use auto (TF_CONFIG when set, else Slurm inside a Slurm step), "
      "tf_config or slurm"));
}

absl::string_view ResolverKindName(ResolverKind kind) {
  switch (kind) {
    case ResolverKind::kAuto:
      return "auto";
    case ResolverKind::kTfConfig:
      return "tf_config";
    case ResolverKind::kSlurm:
      return "slurm";
  }
  return "auto";
}

std::optional<ResolverKind> DetectCluster(ResolverKind kind,
                                          const EnvLookup& env) {
  const std::optional<std::string> tf_config = env("TF_CONFIG");
  // Blank counts as unset, as TFConfigClusterResolver reads it.
  const bool has_tf_config =
      tf_config.has_value() && !TfConfigIsBlank(*tf_config);
  // srun sets both; an sbatch script sets SLURM_PROCID without a step.
  const bool in_slurm = env("SLURM_PROCID").has_value() &&
                        env("SLURM_STEP_NUM_TASKS").has_value();
  switch (kind) {
    case ResolverKind::kTfConfig:
      if (has_tf_config) return kind;
      break;
    case ResolverKind::kSlurm:
      if (env("SLURM_PROCID").has_value()) return kind;
      break;
    case ResolverKind::kAuto:
      if (has_tf_config) return ResolverKind::kTfConfig;
      if (in_slurm) return ResolverKind::kSlurm;
      break;
  }
  return std::nullopt;
}

absl::StatusOr<std::unique_ptr<ClusterResolver>> ResolverFromEnvironment(
    ResolverKind kind, SlurmClusterResolverOptions slurm,
    const EnvLookup& env) {
  const std::optional<ResolverKind> found = DetectCluster(kind, env);
  if (found == ResolverKind::kSlurm || kind == ResolverKind::kSlurm) {
    // Outside a Slurm step the resolver itself says SLURM_PROCID is missing.
    ASSIGN_OR_RETURN(std::unique_ptr<SlurmClusterResolver> resolver,
                     SlurmClusterResolver::Create(std::move(slurm), env));
    return std::unique_ptr<ClusterResolver>(std::move(resolver));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<TFConfigClusterResolver> resolver,
                   TFConfigClusterResolver::FromEnv(env));
  return std::unique_ptr<ClusterResolver>(std::move(resolver));
}

}  // namespace cluster
}  // namespace distribute

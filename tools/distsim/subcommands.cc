#include "tools/distsim/subcommands.h"

#include <vector>

namespace distsim {

std::vector<Subcommand> Subcommands() {
  return {
      {"train",
       "train a classifier with a strategy (the main job: mirrored on a "
       "simulated DGX H100)",
       RunTrain},
      {"collective",
       "predict a collective's time over message sizes on a simulated "
       "topology (nccl-tests style table)",
       RunCollective},
      {"validate",
       "the NCCL model's predictions against published nccl-tests "
       "measurements, per point and per category",
       RunValidate},
      {"devices", "list the platforms and the devices a platform finds",
       RunDevices},
  };
}

}  // namespace distsim

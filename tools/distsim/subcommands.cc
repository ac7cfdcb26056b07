#include "tools/distsim/subcommands.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace distsim {

std::string UserPath(std::string path) {
  if (path.empty() || path[0] == '/') return path;
  const char* dir = std::getenv("BUILD_WORKING_DIRECTORY");
  if (dir == nullptr || *dir == '\0') return path;
  return absl::StrCat(dir, "/", path);
}

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

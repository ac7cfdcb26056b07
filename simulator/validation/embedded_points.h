// The text of simulator/validation/*.textproto (the validation set),
// compiled into the binary so that `distsim validate` needs no files.
#ifndef SIMULATOR_VALIDATION_EMBEDDED_POINTS_H_
#define SIMULATOR_VALIDATION_EMBEDDED_POINTS_H_

#include "absl/types/span.h"
#include "simulator/topologies/embedded_topologies.h"

namespace simulator {
namespace validation {

using EmbeddedFile = topologies::EmbeddedFile;

// Every file of the validation set, in the order the BUILD file lists them.
absl::Span<const EmbeddedFile> EmbeddedValidationFiles();

}  // namespace validation
}  // namespace simulator

#endif  // SIMULATOR_VALIDATION_EMBEDDED_POINTS_H_

#include "devices/communicator.h"

#include "absl/strings/str_cat.h"

namespace devices {

absl::Status Communicator::Unimplemented(absl::string_view collective) const {
  return absl::UnimplementedError(absl::StrCat(
      "communicator backend '", name(), "' does not implement ", collective,
      "; use a collective algorithm over Transport "
      "(distribute::collective) instead"));
}

absl::Status Communicator::AllGather(int, const Tensor&, Tensor&,
                                     const CollectiveOptions&) {
  return Unimplemented("AllGather");
}

absl::Status Communicator::ReduceScatter(int, const Tensor&, Tensor&,
                                         const CollectiveOptions&) {
  return Unimplemented("ReduceScatter");
}

absl::Status Communicator::Broadcast(int, int, Tensor&,
                                     const CollectiveOptions&) {
  return Unimplemented("Broadcast");
}

absl::Status Communicator::Reduce(int, int, const Tensor&, Tensor&,
                                  const CollectiveOptions&) {
  return Unimplemented("Reduce");
}

absl::Status Communicator::AllToAll(int, const Tensor&, Tensor&,
                                    const CollectiveOptions&) {
  return Unimplemented("AllToAll");
}

absl::Status Communicator::Abort(absl::Status) {
  return Unimplemented("Abort");
}

absl::Status Communicator::Send(int, int, const Tensor&,
                                const CollectiveOptions&) {
  return Unimplemented("Send");
}

absl::Status Communicator::Recv(int, int, Tensor&, const CollectiveOptions&) {
  return Unimplemented("Recv");
}

}  // namespace devices

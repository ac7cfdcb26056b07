// Writes a topology file (protobuf text format) from a few flags, or prints
// a built-in topology, as a starting point for a user's own file.
//
//   generate_topology --nodes=4 --gpus_per_node=8
//       --gpu_preset=a100_sxm4_80gb --intra_node_link=nvswitch
//       --intra_node_gbyte_per_second=300 --nics_per_node=8
//       --nic_gbit_per_second=200 --output=my.textproto
//   generate_topology --builtin=tpu_v4:4x4x4
//   generate_topology --list

#include <fstream>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"
#include "simulator/builtin_topologies.h"
#include "simulator/topology.h"
#include "simulator/topology_generator.h"

ABSL_FLAG(std::string, builtin, "",
          "print this built-in topology (e.g. dgx_h100, tpu_v4:4x4x4) "
          "instead of generating one");
ABSL_FLAG(bool, list, false, "list built-in topologies and device presets");
ABSL_FLAG(std::string, output, "", "file to write; empty for stdout");
ABSL_FLAG(std::string, name, "generated", "topology name");
ABSL_FLAG(int64_t, nodes, 1, "number of nodes (hosts)");
ABSL_FLAG(int64_t, gpus_per_node, 8, "GPUs per node");
ABSL_FLAG(std::string, gpu_preset, "h100_sxm5_80gb", "GPU device spec preset");
ABSL_FLAG(std::string, cpu_preset, "xeon_8480c_x2", "CPU device spec preset");
ABSL_FLAG(std::string, intra_node_link, "nvswitch",
          "how GPUs of a node connect: nvswitch, nvlink or pcie");
ABSL_FLAG(double, intra_node_gbyte_per_second, 450,
          "GB/s each way of each GPU's NVSwitch link, or of each GPU-to-GPU "
          "NVLink");
ABSL_FLAG(bool, nvswitch_sharp, false,
          "the NVSwitch reduces data in the network (NVLink SHARP)");
ABSL_FLAG(double, pcie_gbyte_per_second, 63,
          "GB/s each way of every PCIe link (63 for Gen5 x16)");
ABSL_FLAG(int64_t, nics_per_node, 8, "NICs per node (one rail each)");
ABSL_FLAG(double, nic_gbit_per_second, 400, "speed of each NIC in Gb/s");

namespace {

absl::Status Run() {
  if (absl::GetFlag(FLAGS_list)) {
    for (const simulator::BuiltinTopologyInfo& info :
         simulator::ListBuiltinTopologies()) {
      std::cout << info.name << "\n    " << info.description << "\n";
    }
    std::cout << "device presets: "
              << absl::StrJoin(simulator::DeviceSpecPresetNames(), ", ")
              << "\n";
    return absl::OkStatus();
  }
  simulator::TopologyDef def;
  const std::string builtin = absl::GetFlag(FLAGS_builtin);
  if (!builtin.empty()) {
    ASSIGN_OR_RETURN(simulator::TopologyDef found,
                     simulator::BuiltinTopologyDef(builtin));
    def = std::move(found);
  } else {
    simulator::GeneratorOptions options;
    options.name = absl::GetFlag(FLAGS_name);
    options.nodes = absl::GetFlag(FLAGS_nodes);
    options.gpus_per_node = absl::GetFlag(FLAGS_gpus_per_node);
    options.gpu_preset = absl::GetFlag(FLAGS_gpu_preset);
    options.cpu_preset = absl::GetFlag(FLAGS_cpu_preset);
    const std::string link =
        absl::AsciiStrToUpper(absl::GetFlag(FLAGS_intra_node_link));
    if (!simulator::LinkDef::Kind_Parse(link, &options.intra_node_link)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--intra_node_link=", absl::GetFlag(FLAGS_intra_node_link),
          ": use nvswitch, nvlink or pcie"));
    }
    options.intra_node_bandwidth_bytes_per_second =
        absl::GetFlag(FLAGS_intra_node_gbyte_per_second) * 1e9;
    options.nvswitch_in_network_reduction = absl::GetFlag(FLAGS_nvswitch_sharp);
    options.pcie_bandwidth_bytes_per_second =
        absl::GetFlag(FLAGS_pcie_gbyte_per_second) * 1e9;
    options.nics_per_node = absl::GetFlag(FLAGS_nics_per_node);
    options.nic_gbit_per_second = absl::GetFlag(FLAGS_nic_gbit_per_second);
    ASSIGN_OR_RETURN(simulator::TopologyDef generated,
                     simulator::GenerateTopology(options));
    def = std::move(generated);
  }
  const std::string text = simulator::ToTextProto(def);
  const std::string output = absl::GetFlag(FLAGS_output);
  if (output.empty()) {
    std::cout << text;
    return absl::OkStatus();
  }
  std::ofstream file(output);
  file << text;
  if (!file) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write '", output, "'"));
  }
  std::cerr << "wrote " << output << "\n";
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = Run();
  if (!status.ok()) {
    std::cerr << status << "\n";
    return 1;
  }
  return 0;
}

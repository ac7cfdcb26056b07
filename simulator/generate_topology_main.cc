// Writes a topology file (protobuf text format) from a few flags, or prints
// a built-in topology, as a starting point for a user's own file.
//
//   generate_topology --nodes=4 --gpus_per_node=8
//       --gpu_preset=a100_sxm4_80gb --intra_node_link=nvswitch
//       --intra_node_gbyte_per_second=300 --nics_per_node=8
//       --nic_gbit_per_second=200 --output=my.textproto
//   generate_topology --builtin=tpu_v4:4x4x4
//   generate_topology --list

#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"
#include "simulator/builtin_topologies.h"
#include "simulator/topology.h"
#include "simulator/topology_generator.h"
#include "tools/flags/flags.h"

namespace {

// The values of the command line's flags.
struct Flags {
  std::string builtin;
  bool list = false;
  std::string output;
  std::string name = "generated";
  int64_t nodes = 1;
  int64_t gpus_per_node = 8;
  std::string gpu_preset = "h100_sxm5_80gb";
  std::string cpu_preset = "xeon_8480c_x2";
  std::string intra_node_link = "nvswitch";
  double intra_node_gbyte_per_second = 450;
  bool nvswitch_sharp = false;
  double pcie_gbyte_per_second = 63;
  int64_t nics_per_node = 8;
  double nic_gbit_per_second = 400;
};

// Declares `flags`' fields as the binary's flags.
void Declare(Flags& flags, tools_flags::FlagSet& set) {
  set.String("builtin", &flags.builtin,
             "print this built-in topology (e.g. dgx_h100, tpu_v4:4x4x4) "
             "instead of generating one");
  set.Bool("list", &flags.list, "list built-in topologies and device presets");
  set.String("output", &flags.output, "file to write; empty for stdout");
  set.String("name", &flags.name, "topology name");
  set.Int("nodes", &flags.nodes, "number of nodes (hosts)");
  set.Int("gpus_per_node", &flags.gpus_per_node, "GPUs per node");
  set.String("gpu_preset", &flags.gpu_preset, "GPU device spec preset");
  set.String("cpu_preset", &flags.cpu_preset, "CPU device spec preset");
  set.String("intra_node_link", &flags.intra_node_link,
             "how GPUs of a node connect: nvswitch, nvlink or pcie");
  set.Double("intra_node_gbyte_per_second", &flags.intra_node_gbyte_per_second,
             "GB/s each way of each GPU's NVSwitch link, or of each "
             "GPU-to-GPU NVLink");
  set.Bool("nvswitch_sharp", &flags.nvswitch_sharp,
           "the NVSwitch reduces data in the network (NVLink SHARP)");
  set.Double("pcie_gbyte_per_second", &flags.pcie_gbyte_per_second,
             "GB/s each way of every PCIe link (63 for Gen5 x16)");
  set.Int("nics_per_node", &flags.nics_per_node,
          "NICs per node (one rail each)");
  set.Double("nic_gbit_per_second", &flags.nic_gbit_per_second,
             "speed of each NIC in Gb/s");
}

absl::Status Run(const Flags& flags) {
  if (flags.list) {
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
  const std::string builtin = flags.builtin;
  if (!builtin.empty()) {
    ASSIGN_OR_RETURN(simulator::TopologyDef found,
                     simulator::BuiltinTopologyDef(builtin));
    def = std::move(found);
  } else {
    simulator::GeneratorOptions options;
    options.name = flags.name;
    options.nodes = flags.nodes;
    options.gpus_per_node = flags.gpus_per_node;
    options.gpu_preset = flags.gpu_preset;
    options.cpu_preset = flags.cpu_preset;
    const std::string link = absl::AsciiStrToUpper(flags.intra_node_link);
    if (!simulator::LinkDef::Kind_Parse(link, &options.intra_node_link)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--intra_node_link=", flags.intra_node_link,
                       ": use nvswitch, nvlink or pcie"));
    }
    options.intra_node_bandwidth_bytes_per_second =
        flags.intra_node_gbyte_per_second * 1e9;
    options.nvswitch_in_network_reduction = flags.nvswitch_sharp;
    options.pcie_bandwidth_bytes_per_second = flags.pcie_gbyte_per_second * 1e9;
    options.nics_per_node = flags.nics_per_node;
    options.nic_gbit_per_second = flags.nic_gbit_per_second;
    ASSIGN_OR_RETURN(simulator::TopologyDef generated,
                     simulator::GenerateTopology(options));
    def = std::move(generated);
  }
  const std::string text = simulator::ToTextProto(def);
  const std::string output = flags.output;
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
  Flags flags;
  tools_flags::FlagSet set("generate_topology");
  Declare(flags, set);
  const absl::Status parsed = set.Parse(argc, argv);
  if (absl::IsCancelled(parsed)) return 0;  // --help
  if (!parsed.ok()) {
    std::cerr << "generate_topology: " << parsed.message() << "\n";
    return 2;
  }
  const absl::Status status = Run(flags);
  if (!status.ok()) {
    std::cerr << status << "\n";
    return 1;
  }
  return 0;
}

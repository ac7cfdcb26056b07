#include "distribute/cluster/slurm_cluster_resolver.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/cluster/env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace cluster {
namespace {

using ::testing::ElementsAre;

std::unique_ptr<SlurmClusterResolver> MustCreate(
    const SlurmClusterResolverOptions& options,
    std::map<std::string, std::string> env) {
  auto resolver =
      SlurmClusterResolver::Create(options, EnvFromMap(std::move(env)));
  EXPECT_TRUE(resolver.ok()) << resolver.status();
  if (!resolver.ok()) return nullptr;
  return *std::move(resolver);
}

absl::Status CreateError(const SlurmClusterResolverOptions& options,
                         std::map<std::string, std::string> env) {
  return SlurmClusterResolver::Create(options, EnvFromMap(std::move(env)))
      .status();
}

// gpu_allocation of every rank.
std::vector<std::string> Allocations(const SlurmClusterResolver& resolver) {
  std::vector<std::string> out;
  const int64_t tasks = resolver.cluster_spec()->total_tasks();
  for (int64_t rank = 0; rank < tasks; ++rank) {
    absl::StatusOr<std::string> a = resolver.gpu_allocation(rank);
    EXPECT_TRUE(a.ok()) << a.status();
    out.push_back(a.value_or("?"));
  }
  return out;
}

SlurmClusterResolverOptions PsWorkerOptions() {
  SlurmClusterResolverOptions options;
  options.jobs = {{"ps", 1}, {"worker", 2}};
  options.tasks_per_node = 1;
  options.gpus_per_node = 1;
  options.gpus_per_task = 1;
  return options;
}

TEST(SlurmClusterResolverTest, SimpleSuccessfulRetrieval) {
  auto resolver = MustCreate(
      PsWorkerOptions(),
      {{"SLURM_PROCID", "0"}, {"SLURM_STEP_NODELIST", "t02n[13,41,43]"}});
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->cluster_spec(),
            *ClusterSpec::Create({{"ps", {"t02n13:8888"}},
                                  {"worker", {"t02n41:8888", "t02n43:8888"}}}));
  EXPECT_EQ(resolver->task_type(), "ps");
  EXPECT_EQ(resolver->task_id(), 0);
  EXPECT_EQ(resolver->rank(), 0);
  EXPECT_EQ(resolver->rpc_layer(), "grpc");
  EXPECT_EQ(resolver->environment(), "");
  EXPECT_EQ(*resolver->num_accelerators(), (AcceleratorCounts{{"GPU", 1}}));
}

TEST(SlurmClusterResolverTest, SimpleMasterRetrieval) {
  auto resolver = MustCreate(
      PsWorkerOptions(),
      {{"SLURM_PROCID", "0"}, {"SLURM_STEP_NODELIST", "t02n[13,41,43]"}});
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->master(), "grpc://t02n13:8888");
  resolver->set_task_type("worker");
  ASSERT_TRUE(resolver->set_task_id(1).ok());
  EXPECT_EQ(*resolver->master(), "grpc://t02n43:8888");
  resolver->set_rpc_layer("ab");
  EXPECT_EQ(*resolver->master("ps", 0), "ab://t02n13:8888");
  EXPECT_EQ(*resolver->master("ps", 0, "test"), "test://t02n13:8888");
  EXPECT_EQ(resolver->master("ps", 1).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(resolver->set_task_id(-1).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SlurmClusterResolverTest, TasksPerNodeFromEnvironment) {
  SlurmClusterResolverOptions options = PsWorkerOptions();
  options.tasks_per_node.reset();
  auto resolver =
      MustCreate(options, {{"SLURM_PROCID", "2"},
                           {"SLURM_STEP_NODELIST", "t02n[13,41,43]"},
                           {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"}});
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->cluster_spec(),
            *ClusterSpec::Create({{"ps", {"t02n13:8888"}},
                                  {"worker", {"t02n41:8888", "t02n43:8888"}}}));
  EXPECT_EQ(resolver->task_type(), "worker");
  EXPECT_EQ(resolver->task_id(), 1);
}

TEST(SlurmClusterResolverTest, MultipleTasksPerNode) {
  SlurmClusterResolverOptions options;
  options.jobs = {{"ps", 1}, {"worker", 4}};
  options.gpus_per_node = 2;
  options.gpus_per_task = 1;
  auto resolver =
      MustCreate(options, {{"SLURM_PROCID", "1"},
                           {"SLURM_STEP_NODELIST", "t02n[13,41,43]"},
                           {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"}});
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->cluster_spec(),
            *ClusterSpec::Create({{"ps", {"t02n13:8888"}},
                                  {"worker",
                                   {"t02n13:8889", "t02n41:8888", "t02n41:8889",
                                    "t02n43:8888"}}}));
  EXPECT_EQ(resolver->task_type(), "worker");
  EXPECT_EQ(resolver->task_id(), 0);
  EXPECT_EQ(resolver->cuda_visible_devices(), "1");
  EXPECT_THAT(Allocations(*resolver), ElementsAre("0", "1", "0", "1", "0"));
  EXPECT_THAT(resolver->task_configuration(),
              ElementsAre(std::make_pair(std::string("t02n13"), int64_t{2}),
                          std::make_pair(std::string("t02n41"), int64_t{2}),
                          std::make_pair(std::string("t02n43"), int64_t{1})));
}

TEST(SlurmClusterResolverTest, MultipleGpusPerTask) {
  SlurmClusterResolverOptions options;
  options.jobs = {{"ps", 1}, {"worker", 4}};
  options.gpus_per_node = 4;
  options.gpus_per_task = 2;
  auto resolver =
      MustCreate(options, {{"SLURM_PROCID", "1"},
                           {"SLURM_STEP_NODELIST", "t02n[13,41,43]"},
                           {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"},
                           {"CUDA_VISIBLE_DEVICES", ""}});
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->cuda_visible_devices(), "2,3");
  EXPECT_EQ(*resolver->num_accelerators("worker", 3),
            (AcceleratorCounts{{"GPU", 2}}));
}

TEST(SlurmClusterResolverTest, DefaultsToWorkersAndVisibleGpus) {
  auto resolver = MustCreate(SlurmClusterResolverOptions(),
                             {{"SLURM_PROCID", "3"},
                              {"SLURM_STEP_NUM_TASKS", "4"},
                              {"SLURM_STEP_NUM_NODES", "2"},
                              {"SLURM_STEP_NODELIST", "gpu[01-02]"},
                              {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                              {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}});
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->cluster_spec(),
            *ClusterSpec::Create(
                {{"worker",
                  {"gpu01:8888", "gpu01:8889", "gpu02:8888", "gpu02:8889"}}}));
  EXPECT_EQ(resolver->task_type(), "worker");
  EXPECT_EQ(resolver->task_id(), 3);
  EXPECT_EQ(resolver->gpus_per_node(), 4);
  EXPECT_EQ(resolver->gpus_per_task(), 2);
  EXPECT_EQ(resolver->cuda_visible_devices(), "2,3");
  EXPECT_EQ(*resolver->master(), "grpc://gpu02:8889");
}

TEST(SlurmClusterResolverTest, GpuIdsFollowCudaVisibleDevices) {
  // Slurm without device cgroups hands out physical ids such as 4-7.
  auto resolver = MustCreate(SlurmClusterResolverOptions(),
                             {{"SLURM_PROCID", "1"},
                              {"SLURM_STEP_NUM_TASKS", "2"},
                              {"SLURM_STEP_NODELIST", "n1"},
                              {"SLURM_STEP_TASKS_PER_NODE", "2"},
                              {"CUDA_VISIBLE_DEVICES", "4,5,6,7"}});
  ASSERT_NE(resolver, nullptr);
  EXPECT_THAT(Allocations(*resolver), ElementsAre("4,5", "6,7"));
}

// Neither gpus_per_node nor CUDA_VISIBLE_DEVICES: the node's GPUs are
// counted (by nvidia-smi unless a counter is given), as TF does, and shared
// among the node's tasks.
TEST(SlurmClusterResolverTest, CountsTheNodesGpusWhereNothingSays) {
  SlurmClusterResolverOptions options;
  int counted = 0;
  options.count_node_gpus = [&counted]() -> absl::StatusOr<int64_t> {
    ++counted;
    return 8;
  };
  auto resolver = MustCreate(options, {{"SLURM_PROCID", "1"},
                                       {"SLURM_STEP_NUM_TASKS", "2"},
                                       {"SLURM_STEP_NODELIST", "n1"},
                                       {"SLURM_STEP_TASKS_PER_NODE", "2"}});
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(counted, 1);
  EXPECT_EQ(resolver->gpus_per_node(), 8);
  EXPECT_THAT(Allocations(*resolver), ElementsAre("0,1,2,3", "4,5,6,7"));
  EXPECT_EQ(*resolver->num_accelerators(), (AcceleratorCounts{{"GPU", 4}}));

  // CUDA_VISIBLE_DEVICES, when set, is the count; nothing is asked.
  auto visible = MustCreate(options, {{"SLURM_PROCID", "1"},
                                      {"SLURM_STEP_NUM_TASKS", "2"},
                                      {"SLURM_STEP_NODELIST", "n1"},
                                      {"SLURM_STEP_TASKS_PER_NODE", "2"},
                                      {"CUDA_VISIBLE_DEVICES", "0,1"}});
  ASSERT_NE(visible, nullptr);
  EXPECT_EQ(counted, 1);
  EXPECT_EQ(visible->gpus_per_node(), 2);
}

TEST(SlurmClusterResolverTest, CpuOnlyNodes) {
  SlurmClusterResolverOptions options;
  options.gpus_per_node = 0;
  options.port_base = 2000;
  auto resolver = MustCreate(options, {{"SLURM_PROCID", "0"},
                                       {"SLURM_STEP_NUM_TASKS", "3"},
                                       {"SLURM_STEP_NODELIST", "cpu7"},
                                       {"SLURM_STEP_TASKS_PER_NODE", "3"}});
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->cluster_spec(),
            *ClusterSpec::Create(
                {{"worker", {"cpu7:2000", "cpu7:2001", "cpu7:2002"}}}));
  EXPECT_EQ(resolver->cuda_visible_devices(), "");
  EXPECT_TRUE(resolver->num_accelerators()->empty());
}

TEST(SlurmClusterResolverTest, HeterogeneousTasksPerNode) {
  SlurmClusterResolverOptions options;
  options.jobs = {{"chief", 1}, {"worker", 3}};
  options.gpus_per_node = 3;
  auto resolver = MustCreate(options, {{"SLURM_PROCID", "3"},
                                       {"SLURM_STEP_NODELIST", "a,b"},
                                       {"SLURM_STEP_TASKS_PER_NODE", "3,1"}});
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->gpus_per_task(), 1);
  EXPECT_THAT(Allocations(*resolver), ElementsAre("0", "1", "2", "0"));
  EXPECT_EQ(*resolver->cluster_spec(),
            *ClusterSpec::Create({{"chief", {"a:8888"}},
                                  {"worker", {"a:8889", "a:8890", "b:8888"}}}));
  EXPECT_EQ(resolver->task_type(), "worker");
  EXPECT_EQ(resolver->task_id(), 2);
}

TEST(SlurmClusterResolverTest, RanksFollowTheNodeListOrder) {
  // Slurm puts rank 0 on n9; the list order, not name order, decides.
  SlurmClusterResolverOptions options;
  options.gpus_per_node = 0;
  auto resolver = MustCreate(options, {{"SLURM_PROCID", "0"},
                                       {"SLURM_STEP_NUM_TASKS", "2"},
                                       {"SLURM_STEP_NODELIST", "n[9-10]"},
                                       {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}});
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->master(), "grpc://n9:8888");
  EXPECT_EQ(*resolver->master("worker", 1), "grpc://n10:8888");
}

// Where srun says the task runs (its node and local id) agrees with the
// block layout: accepted.
TEST(SlurmClusterResolverTest, BlockDistributionMatchesSrunsPlacement) {
  SlurmClusterResolverOptions options;
  options.gpus_per_node = 0;
  auto resolver = SlurmClusterResolver::Create(
      options, EnvFromMap({{"SLURM_PROCID", "3"},
                           {"SLURM_STEP_NUM_TASKS", "4"},
                           {"SLURM_STEP_NODELIST", "n[1-2]"},
                           {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                           {"SLURMD_NODENAME", "n2"},
                           {"SLURM_LOCALID", "1"}}));
  ASSERT_TRUE(resolver.ok()) << resolver.status();
  EXPECT_EQ((*resolver)->task_id(), 3);
}

TEST(SlurmClusterResolverTest, ExplicitTasksPerHost) {
  SlurmClusterResolverOptions options;
  options.gpus_per_node = 2;
  options.jobs = {{"worker", 3}};
  options.tasks_per_host = {{"hostB", 2}, {"hostA", 1}};
  auto resolver = MustCreate(options, {{"SLURM_PROCID", "2"}});
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->cluster_spec(),
            *ClusterSpec::Create(
                {{"worker", {"hostB:8888", "hostB:8889", "hostA:8888"}}}));
  EXPECT_EQ(resolver->cuda_visible_devices(), "0");
}

TEST(SlurmClusterResolverTest, ApplyCudaVisibleDevices) {
  SlurmClusterResolverOptions options;
  options.jobs = {{"ps", 1}, {"worker", 4}};
  options.gpus_per_node = 4;
  options.gpus_per_task = 2;
  auto resolver =
      MustCreate(options, {{"SLURM_PROCID", "1"},
                           {"SLURM_STEP_NODELIST", "t02n[13,41,43]"},
                           {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"}});
  ASSERT_NE(resolver, nullptr);
  std::map<std::string, std::string> set;
  ASSERT_TRUE(resolver
                  ->ApplyCudaVisibleDevices(
                      [&set](absl::string_view name, absl::string_view value) {
                        set[std::string(name)] = std::string(value);
                        return absl::OkStatus();
                      })
                  .ok());
  EXPECT_EQ(
      set,
      (std::map<std::string, std::string>{{"CUDA_VISIBLE_DEVICES", "2,3"}}));
  absl::Status failed = resolver->ApplyCudaVisibleDevices(
      [](absl::string_view, absl::string_view) {
        return absl::InternalError("read-only environment");
      });
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal);
}

struct SlurmError {
  std::string name;
  SlurmClusterResolverOptions options;
  std::map<std::string, std::string> env;
  absl::StatusCode code;
  std::string message;
};

class SlurmErrorTest : public ::testing::TestWithParam<SlurmError> {};

TEST_P(SlurmErrorTest, NamesTheVariableOrOption) {
  absl::Status status = CreateError(GetParam().options, GetParam().env);
  EXPECT_EQ(status.code(), GetParam().code);
  EXPECT_EQ(status.message(), GetParam().message);
}

SlurmClusterResolverOptions Gpus(int64_t per_node) {
  SlurmClusterResolverOptions options;
  options.gpus_per_node = per_node;
  return options;
}

SlurmClusterResolverOptions WithJobs(SlurmClusterResolverOptions options,
                                     std::map<std::string, int64_t> jobs) {
  options.jobs = std::move(jobs);
  return options;
}

const std::map<std::string, std::string> kTwoNodes = {
    {"SLURM_PROCID", "0"},
    {"SLURM_STEP_NUM_TASKS", "4"},
    {"SLURM_STEP_NODELIST", "n[1-2]"},
    {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}};

std::map<std::string, std::string> TwoNodesWith(
    std::map<std::string, std::string> changes) {
  std::map<std::string, std::string> env = kTwoNodes;
  for (auto& [name, value] : changes) env[name] = value;
  return env;
}

std::map<std::string, std::string> TwoNodesWithout(const std::string& name) {
  std::map<std::string, std::string> env = kTwoNodes;
  env.erase(name);
  return env;
}

INSTANTIATE_TEST_SUITE_P(
    Invalid, SlurmErrorTest,
    ::testing::Values(
        SlurmError{"NoProcId", Gpus(0), TwoNodesWithout("SLURM_PROCID"),
                   absl::StatusCode::kFailedPrecondition,
                   "SlurmClusterResolver: SLURM_PROCID not found in "
                   "environment. Not running inside a Slurm step (srun)?"},
        SlurmError{"BadProcId", Gpus(0), TwoNodesWith({{"SLURM_PROCID", "x"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: SLURM_PROCID=\"x\" is not a "
                   "non-negative integer"},
        SlurmError{"NegativeProcId", Gpus(0),
                   TwoNodesWith({{"SLURM_PROCID", "-1"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: SLURM_PROCID=\"-1\" is not a "
                   "non-negative integer"},
        SlurmError{"ProcIdOutOfRange", Gpus(0),
                   TwoNodesWith({{"SLURM_PROCID", "4"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: SLURM_PROCID=4 but the step has "
                   "only 4 tasks"},
        SlurmError{"NoNumTasks", Gpus(0),
                   TwoNodesWithout("SLURM_STEP_NUM_TASKS"),
                   absl::StatusCode::kFailedPrecondition,
                   "SlurmClusterResolver: SLURM_STEP_NUM_TASKS not found in "
                   "environment. Not running inside a Slurm step (srun)?"},
        SlurmError{"BadNumTasks", Gpus(0),
                   TwoNodesWith({{"SLURM_STEP_NUM_TASKS", "four"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: SLURM_STEP_NUM_TASKS=\"four\" is "
                   "not a non-negative integer"},
        SlurmError{"NoNodeList", Gpus(0),
                   TwoNodesWithout("SLURM_STEP_NODELIST"),
                   absl::StatusCode::kFailedPrecondition,
                   "SlurmClusterResolver: SLURM_STEP_NODELIST not found in "
                   "environment. Not running inside a Slurm step (srun)?"},
        SlurmError{"NoTasksPerNode", Gpus(0),
                   TwoNodesWithout("SLURM_STEP_TASKS_PER_NODE"),
                   absl::StatusCode::kFailedPrecondition,
                   "SlurmClusterResolver: SLURM_STEP_TASKS_PER_NODE not found "
                   "in environment. Not running inside a Slurm step (srun)?"},
        SlurmError{"BadNodeList", Gpus(0),
                   TwoNodesWith({{"SLURM_STEP_NODELIST", "n[1-2"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: SLURM_STEP_NODELIST: invalid Slurm "
                   "hostlist \"n[1-2\" at position 1: \"[\" without \"]\""},
        SlurmError{"ReversedRange", Gpus(0),
                   TwoNodesWith({{"SLURM_STEP_NODELIST", "n[2-1]"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: SLURM_STEP_NODELIST: invalid Slurm "
                   "hostlist \"n[2-1]\" at position 2: range \"2-1\" is "
                   "reversed; write it 1-2"},
        SlurmError{"BadTasksPerNode", Gpus(0),
                   TwoNodesWith({{"SLURM_STEP_TASKS_PER_NODE", "2(x2"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: SLURM_STEP_TASKS_PER_NODE: invalid "
                   "Slurm tasks-per-node list \"2(x2\": entry \"2(x2\" is "
                   "malformed; expected entries like \"2\" or \"2(x3)\", "
                   "e.g. \"2(x3),1\""},
        SlurmError{"NodeCountMismatch", Gpus(0),
                   TwoNodesWith({{"SLURM_STEP_TASKS_PER_NODE", "2(x3)"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: SLURM_STEP_TASKS_PER_NODE=\"2(x3)\" "
                   "gives 3 nodes but SLURM_STEP_NODELIST=\"n[1-2]\" names 2"},
        SlurmError{"NumNodesMismatch", Gpus(0),
                   TwoNodesWith({{"SLURM_STEP_NUM_NODES", "3"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: SLURM_STEP_NUM_NODES=3 but "
                   "SLURM_STEP_NODELIST=\"n[1-2]\" names 2 hosts"},
        SlurmError{"DuplicateHost", Gpus(0),
                   TwoNodesWith({{"SLURM_STEP_NODELIST", "n1,n1"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: host 'n1' appears twice in the node "
                   "list; give each node once with its number of tasks"},
        SlurmError{"TooManyTasksRequested",
                   WithJobs(Gpus(0), {{"ps", 2}, {"worker", 4}}), kTwoNodes,
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: Requested 6 tasks (ps: 2, worker: "
                   "4, from the jobs option) but only 4 were assigned by "
                   "Slurm (SLURM_STEP_TASKS_PER_NODE over "
                   "SLURM_STEP_NODELIST); the jobs must add up to the step's "
                   "tasks"},
        SlurmError{"TooFewTasksRequested", WithJobs(Gpus(0), {{"worker", 3}}),
                   kTwoNodes, absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: Requested 3 tasks (worker: 3, from "
                   "the jobs option) but 4 were assigned by Slurm "
                   "(SLURM_STEP_TASKS_PER_NODE over SLURM_STEP_NODELIST); the "
                   "jobs must add up to the step's tasks"},
        SlurmError{"StepTasksDisagree", Gpus(0),
                   TwoNodesWith({{"SLURM_STEP_NUM_TASKS", "3"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: Requested 3 tasks (worker: 3, from "
                   "SLURM_STEP_NUM_TASKS) but 4 were assigned by Slurm "
                   "(SLURM_STEP_TASKS_PER_NODE over SLURM_STEP_NODELIST); the "
                   "jobs must add up to the step's tasks"},
        SlurmError{"NegativeJob",
                   WithJobs(Gpus(0), {{"ps", -1}, {"worker", 5}}), kTwoNodes,
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: jobs[\"ps\"] is -1; a job has "
                   "from 0 to 1048576 tasks"},
        SlurmError{"BadJobName", WithJobs(Gpus(0), {{"my-job", 4}}),
                   kTwoNodes, absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: job name 'my-job' contains '-'; "
                   "job names match [A-Za-z][A-Za-z0-9_]*"},
        SlurmError{"NoGpuCount",
                   [] {
                     SlurmClusterResolverOptions o;
                     o.count_node_gpus = []() -> absl::StatusOr<int64_t> {
                       return absl::NotFoundError(
                           "`nvidia-smi --list-gpus`: nvidia-smi is not on "
                           "PATH");
                     };
                     return o;
                   }(),
                   kTwoNodes, absl::StatusCode::kFailedPrecondition,
                   "SlurmClusterResolver: gpus_per_node is not given, "
                   "CUDA_VISIBLE_DEVICES is not set and the node's GPUs "
                   "could not be counted (`nvidia-smi --list-gpus`: "
                   "nvidia-smi is not on PATH); pass gpus_per_node (0 for "
                   "CPU-only nodes)"},
        SlurmError{"NegativeGpus", Gpus(-1), kTwoNodes,
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: gpus_per_node is -1; it is from 0 "
                   "to 4096"},
        // Counts that used to overflow the checks' sums and products.
        SlurmError{"HugeGpusPerNode", Gpus(int64_t{100000000000}), kTwoNodes,
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: gpus_per_node is 100000000000; it "
                   "is from 0 to 4096"},
        SlurmError{"HugeGpusPerTask",
                   [] {
                     SlurmClusterResolverOptions o = Gpus(2);
                     o.gpus_per_task = int64_t{1} << 62;
                     return o;
                   }(),
                   kTwoNodes, absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: Requested more GPUs per node than "
                   "available: 2 tasks x 4611686018427387904 GPUs per task > "
                   "2 GPUs per node"},
        SlurmError{"HugeJob",
                   WithJobs(Gpus(0), {{"ps", int64_t{1} << 62},
                                      {"worker", int64_t{1} << 62}}),
                   kTwoNodes, absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: jobs[\"ps\"] is "
                   "4611686018427387904; a job has from 0 to 1048576 "
                   "tasks"},
        // 32,768 nodes of 56,648 tasks: each count is allowed, their sum of
        // 1.9 billion would take gigabytes of addresses (a fuzzer's input).
        SlurmError{"BillionTaskStep", Gpus(0),
                   TwoNodesWith({{"SLURM_STEP_NUM_TASKS", "1856241664"},
                                 {"SLURM_STEP_NODELIST", "n[1-32768]"},
                                 {"SLURM_STEP_TASKS_PER_NODE",
                                  "56648(x32768)"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: jobs[\"worker\"] is 1856241664; a "
                   "job has from 0 to 1048576 tasks"},
        SlurmError{"TooManyTasksOnTheNodes",
                   WithJobs(Gpus(0), {{"ps", 600000}, {"worker", 600000}}),
                   TwoNodesWith({{"SLURM_STEP_NODELIST", "n[1-32768]"},
                                 {"SLURM_STEP_TASKS_PER_NODE", "40(x32768)"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: the step's nodes are given more "
                   "than 1048576 tasks (40 on node n26215 alone); a step has "
                   "at most 1048576"},
        // srun -m cyclic: rank 1 runs on n2, where the block layout has n1.
        SlurmError{"CyclicDistribution", Gpus(0),
                   TwoNodesWith({{"SLURM_PROCID", "1"},
                                 {"SLURMD_NODENAME", "n2"},
                                 {"SLURM_LOCALID", "0"},
                                 {"SLURM_DISTRIBUTION", "cyclic"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: SLURM_PROCID=1 runs on n2 as its "
                   "task 0 (SLURMD_NODENAME, SLURM_LOCALID), but the block "
                   "layout of SLURM_STEP_NODELIST and "
                   "SLURM_STEP_TASKS_PER_NODE puts it on n1 as task 1; run "
                   "the step with srun's default block distribution "
                   "(SLURM_DISTRIBUTION is \"cyclic\"; use -m block) or give "
                   "tasks_per_host"},
        SlurmError{"TooManyTasksOnANode", Gpus(0),
                   TwoNodesWith({{"SLURM_STEP_TASKS_PER_NODE", "70000(x2)"},
                                 {"SLURM_STEP_NUM_TASKS", "140000"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: node n1 is given 70000 tasks; a "
                   "node runs at most 65535 (one port each)"},
        SlurmError{"MoreGpusThanAvailable",
                   [] {
                     SlurmClusterResolverOptions o = Gpus(2);
                     o.gpus_per_task = 2;
                     return o;
                   }(),
                   kTwoNodes, absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: Requested more GPUs per node than "
                   "available: 2 tasks x 2 GPUs per task > 2 GPUs per node"},
        SlurmError{"VisibleGpusTooFew", SlurmClusterResolverOptions(),
                   [] {
                     auto env = kTwoNodes;
                     env["CUDA_VISIBLE_DEVICES"] = "0";
                     return env;
                   }(),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: 1 GPUs per node cannot be shared "
                   "by up to 2 tasks per node; pass gpus_per_task (0 to run "
                   "the tasks without GPUs)"},
        SlurmError{"PortOverflow",
                   [] {
                     SlurmClusterResolverOptions o = Gpus(0);
                     o.port_base = 65535;
                     return o;
                   }(),
                   kTwoNodes, absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: port_base 65535 with up to 2 tasks "
                   "per node leaves ports outside [1, 65535]"},
        SlurmError{"PortZero",
                   [] {
                     SlurmClusterResolverOptions o = Gpus(0);
                     o.port_base = 0;
                     return o;
                   }(),
                   kTwoNodes, absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: port_base 0 with up to 2 tasks per "
                   "node leaves ports outside [1, 65535]"},
        SlurmError{"BothTaskLayouts",
                   [] {
                     SlurmClusterResolverOptions o = Gpus(0);
                     o.tasks_per_node = 2;
                     o.tasks_per_host = {{"n1", 2}, {"n2", 2}};
                     return o;
                   }(),
                   kTwoNodes, absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: give tasks_per_node or "
                   "tasks_per_host, not both"},
        SlurmError{"ZeroTasksPerNode",
                   [] {
                     SlurmClusterResolverOptions o = Gpus(0);
                     o.tasks_per_node = 0;
                     return o;
                   }(),
                   kTwoNodes, absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: host 'n1' has 0 tasks; tasks per "
                   "node must be positive"},
        SlurmError{"BadHostName",
                   WithJobs(Gpus(0), {{"worker", 1}}),
                   TwoNodesWith({{"SLURM_STEP_NODELIST", "n/1"},
                                 {"SLURM_STEP_TASKS_PER_NODE", "1"}}),
                   absl::StatusCode::kInvalidArgument,
                   "SlurmClusterResolver: task 0 of job 'worker': address "
                   "'n/1:8888' has host 'n/1' containing '/'; a host is a "
                   "name or IPv4 address ([A-Za-z0-9._-]) or a bracketed "
                   "IPv6 address"}),
    [](const ::testing::TestParamInfo<SlurmError>& info) {
      return info.param.name;
    });

// A step of many nodes, each with many GPUs for its one task: the
// allocations are held once per index on the node, so this is cheap (one
// string per rank would be 65,536 copies of 2,047 GPUs' ids, 600 MB).
TEST(SlurmClusterResolverTest, ManyNodesWithManyGpusEach) {
  std::vector<std::string> ids;
  for (int g = 0; g < 2047; ++g) ids.push_back(absl::StrCat(g));
  const std::string visible = absl::StrJoin(ids, ",");
  SlurmClusterResolverOptions options;
  auto resolver =
      MustCreate(options, {{"SLURM_PROCID", "65535"},
                           {"SLURM_STEP_NUM_TASKS", "65536"},
                           {"SLURM_STEP_NODELIST", "n[00000-65535]"},
                           {"SLURM_STEP_TASKS_PER_NODE", "1(x65536)"},
                           {"CUDA_VISIBLE_DEVICES", visible}});
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->gpus_per_task(), 2047);
  EXPECT_EQ(resolver->cuda_visible_devices(), visible);
  EXPECT_EQ(*resolver->gpu_allocation(0), visible);
  EXPECT_EQ(*resolver->gpu_allocation(40000), visible);
  EXPECT_EQ(resolver->gpu_allocation(65536).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(resolver->gpu_allocation(-1).status().code(),
            absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace cluster
}  // namespace distribute

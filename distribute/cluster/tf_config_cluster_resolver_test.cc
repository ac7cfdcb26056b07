#include "distribute/cluster/tf_config_cluster_resolver.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/cluster/cuda_driver.h"
#include "distribute/cluster/env.h"
#include "gtest/gtest.h"

namespace distribute {
namespace cluster {
namespace {

constexpr char kPsWorker[] = R"(
    {
      "cluster": {
        "ps": ["ps0:2222", "ps1:2222"],
        "worker": ["worker0:2222", "worker1:2222", "worker2:2222"]
      },
      "task": {"type": "ps", "index": 0}
    })";

constexpr char kPsWorkerGrpc[] = R"(
    {
      "cluster": {
        "ps": ["ps0:2222", "ps1:2222"],
        "worker": ["worker0:2222", "worker1:2222", "worker2:2222"]
      },
      "rpc_layer": "grpc",
      "task": {"type": "ps", "index": 1}
    })";

// No local GPUs unless a test says otherwise, whatever the test machine has.
TFConfigClusterResolverOptions NoGpus() {
  TFConfigClusterResolverOptions options;
  options.local_accelerators = []() -> absl::StatusOr<AcceleratorCounts> {
    return AcceleratorCounts{};
  };
  return options;
}

std::unique_ptr<TFConfigClusterResolver> MustParse(
    const std::string& tf_config,
    TFConfigClusterResolverOptions options = NoGpus()) {
  auto resolver = TFConfigClusterResolver::FromJson(tf_config, options);
  EXPECT_TRUE(resolver.ok()) << resolver.status();
  if (!resolver.ok()) return nullptr;
  return *std::move(resolver);
}

TEST(TFConfigClusterResolverTest, NormalClusterSpecRead) {
  auto resolver = MustParse(kPsWorker);
  ASSERT_NE(resolver, nullptr);
  absl::StatusOr<ClusterSpec> spec = resolver->cluster_spec();
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(
      *spec,
      *ClusterSpec::Create(
          {{"ps", {"ps0:2222", "ps1:2222"}},
           {"worker", {"worker0:2222", "worker1:2222", "worker2:2222"}}}));
  ClusterDef def = spec->AsClusterDef();
  ASSERT_EQ(def.job_size(), 2);
  EXPECT_EQ(def.job(0).name(), "ps");
  EXPECT_EQ(def.job(0).tasks().at(1), "ps1:2222");
  EXPECT_EQ(resolver->task_type(), "ps");
  EXPECT_EQ(resolver->task_id(), 0);
  EXPECT_EQ(resolver->rpc_layer(), std::nullopt);
  EXPECT_EQ(resolver->environment(), "");
}

TEST(TFConfigClusterResolverTest, AutomaticMasterRead) {
  auto resolver = MustParse(kPsWorker);
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->master(), "ps0:2222");
  EXPECT_EQ(*resolver->master("worker", 1), "worker1:2222");
  EXPECT_EQ(*resolver->master("worker", 1, "grpc"), "grpc://worker1:2222");
}

TEST(TFConfigClusterResolverTest, SessionMasterRead) {
  auto resolver = MustParse(R"({
      "cluster": {"ps": ["ps0:2222"], "worker": ["worker0:2222"]},
      "session_master": "sessionmaster:2222",
      "task": {"type": "ps", "index": 0}})");
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->session_master(), "sessionmaster:2222");
  EXPECT_EQ(*resolver->master(), "sessionmaster:2222");
  // Naming a task asks for that task, not the session master.
  EXPECT_EQ(*resolver->master("worker", 0), "worker0:2222");
}

TEST(TFConfigClusterResolverTest, RpcLayerRead) {
  auto resolver = MustParse(kPsWorkerGrpc);
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->master(), "grpc://ps1:2222");
  EXPECT_EQ(resolver->task_type(), "ps");
  EXPECT_EQ(resolver->task_id(), 1);
  EXPECT_EQ(resolver->rpc_layer(), "grpc");
  EXPECT_EQ(*resolver->master(std::nullopt, std::nullopt, "http"),
            "http://ps1:2222");
}

TEST(TFConfigClusterResolverTest, ParameterOverrides) {
  TFConfigClusterResolverOptions options = NoGpus();
  options.task_type = "ps";
  options.task_id = 0;
  auto resolver = MustParse(kPsWorkerGrpc, options);
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->master(), "grpc://ps0:2222");
  EXPECT_EQ(resolver->task_type(), "ps");
  EXPECT_EQ(resolver->task_id(), 0);

  resolver->set_task_type("worker");
  ASSERT_TRUE(resolver->set_task_id(1).ok());
  resolver->set_rpc_layer("test");
  EXPECT_EQ(*resolver->master(), "test://worker1:2222");
  EXPECT_EQ(resolver->task_type(), "worker");
  EXPECT_EQ(resolver->task_id(), 1);
  EXPECT_EQ(resolver->rpc_layer(), "test");
  EXPECT_EQ(resolver->set_task_id(-3).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TFConfigClusterResolverTest, TaskIndexOverride) {
  TFConfigClusterResolverOptions options = NoGpus();
  options.task_id = 1;
  auto resolver = MustParse(R"({"cluster": {"worker": ["w0:1", "w1:1"]},
                                "task": {"type": "worker", "index": "0"}})",
                            options);
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->task_id(), 1);
}

TEST(TFConfigClusterResolverTest, TaskIndexGivenAsString) {
  auto resolver = MustParse(R"({
      "cluster": {"ps": ["ps0:2222", "ps1:2222"]},
      "task": {"type": "ps", "index": "1"}})");
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->task_id(), 1);
}

TEST(TFConfigClusterResolverTest, WholeNumberWrittenAsFloatIsAnIndex) {
  auto resolver = MustParse(R"({
      "cluster": {"ps": ["ps0:2222", "ps1:2222"]},
      "task": {"type": "ps", "index": 1.0}})");
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->task_id(), 1);
}

TEST(TFConfigClusterResolverTest, EmptyConfigIsALocalProcess) {
  for (const char* config : {"", "   ", "{}", "{\n}"}) {
    auto resolver = MustParse(config);
    ASSERT_NE(resolver, nullptr);
    EXPECT_TRUE(resolver->cluster_spec()->empty());
    EXPECT_EQ(resolver->task_type(), std::nullopt);
    EXPECT_EQ(resolver->task_id(), std::nullopt);
    EXPECT_EQ(*resolver->master(), "");
  }
}

TEST(TFConfigClusterResolverTest, UnsetVariableIsALocalProcess) {
  auto resolver = TFConfigClusterResolver::FromEnv(EnvFromMap({}), NoGpus());
  ASSERT_TRUE(resolver.ok()) << resolver.status();
  EXPECT_TRUE((*resolver)->cluster_spec()->empty());
  EXPECT_EQ(*(*resolver)->master(), "");
}

TEST(TFConfigClusterResolverTest, OneTaskClusterHasNoMaster) {
  auto resolver = MustParse(R"({"cluster": {"worker": ["worker0:2222"]},
                                "task": {"type": "worker", "index": 0},
                                "rpc_layer": "grpc"})");
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->master(), "");
}

// Only an evaluator outside the cluster is its own master; a task type set
// over TF_CONFIG's that names no job is an error, not "".
TEST(TFConfigClusterResolverTest,
     OverriddenTaskTypeOutsideTheClusterHasNoMaster) {
  auto resolver = MustParse(R"({"cluster": {"worker": ["w0:1", "w1:1"]},
                                "task": {"type": "worker", "index": 0}})");
  ASSERT_NE(resolver, nullptr);
  resolver->set_task_type("wroker");
  EXPECT_EQ(resolver->master().status().code(), absl::StatusCode::kNotFound);
  resolver->set_task_type("evaluator");
  EXPECT_EQ(*resolver->master(), "");
}

TEST(TFConfigClusterResolverTest, ChiefWorkerPs) {
  auto resolver = MustParse(R"({
      "cluster": {"chief": ["chief0:2222"],
                  "worker": ["w0:2222", "w1:2222"],
                  "ps": ["ps0:2222"]},
      "task": {"type": "chief", "index": 0},
      "rpc_layer": "grpc",
      "environment": "cloud"})");
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->task_type(), "chief");
  EXPECT_EQ(resolver->task_id(), 0);
  EXPECT_EQ(resolver->environment(), "cloud");
  EXPECT_EQ(*resolver->master(), "grpc://chief0:2222");
  EXPECT_EQ(*resolver->master("ps", 0), "grpc://ps0:2222");
  EXPECT_EQ(resolver->cluster_spec()->total_tasks(), 4);
}

TEST(TFConfigClusterResolverTest, DictJobs) {
  auto resolver = MustParse(R"({
      "cluster": {"worker": {"1": "w1:2222", "3": "w3:2222"},
                  "ps": ["ps0:2222"]},
      "task": {"type": "worker", "index": 3}})");
  ASSERT_NE(resolver, nullptr);
  absl::StatusOr<std::vector<int64_t>> indices =
      resolver->cluster_spec()->task_indices("worker");
  ASSERT_TRUE(indices.ok());
  EXPECT_EQ(*indices, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(*resolver->master(), "w3:2222");
}

TEST(TFConfigClusterResolverTest, EvaluatorMayRunOutsideTheCluster) {
  auto resolver = MustParse(R"({
      "cluster": {"chief": ["c0:2222"], "worker": ["w0:2222"]},
      "task": {"type": "evaluator", "index": 0}})");
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->task_type(), "evaluator");
  EXPECT_EQ(resolver->task_id(), 0);
  EXPECT_EQ(*resolver->master("chief", 0), "c0:2222");
  // The evaluator is its own master; a named task outside the cluster is not.
  EXPECT_EQ(*resolver->master(), "");
  EXPECT_EQ(resolver->master("evaluator", 0).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(TFConfigClusterResolverTest, EvaluatorInTheCluster) {
  auto resolver = MustParse(R"({
      "cluster": {"evaluator": ["e0:2222"], "worker": ["w0:2222"]},
      "task": {"type": "evaluator", "index": 0}})");
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->master(), "e0:2222");
}

TEST(TFConfigClusterResolverTest, UnknownKeysAndNullsAreIgnored) {
  auto resolver = MustParse(R"({
      "cluster": {"worker": ["w0:2222", "w1:2222"]},
      "task": {"type": "worker", "index": 1, "trial": "7"},
      "rpc_layer": null,
      "job": {"job_name": "x"}})");
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->rpc_layer(), std::nullopt);
  EXPECT_EQ(*resolver->master(), "w1:2222");
}

TEST(TFConfigClusterResolverTest, EnvironmentOverride) {
  TFConfigClusterResolverOptions options = NoGpus();
  options.environment = "google";
  options.rpc_layer = "grpc+verbs";
  auto resolver = MustParse(kPsWorkerGrpc, options);
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->environment(), "google");
  EXPECT_EQ(resolver->rpc_layer(), "grpc+verbs");
}

TEST(TFConfigClusterResolverTest, MasterWithoutATaskIsFailedPrecondition) {
  auto resolver = MustParse(R"({"cluster": {"worker": ["w0:1", "w1:1"]}})");
  ASSERT_NE(resolver, nullptr);
  absl::Status status = resolver->master().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "TFConfigClusterResolver::master: no task type is known; "
            "TF_CONFIG has no complete \"task\" section, so pass task_type "
            "and task_id");
  EXPECT_EQ(*resolver->master("worker", 1), "w1:1");
  EXPECT_EQ(resolver->master("worker", 2).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(TFConfigClusterResolverTest, ReadsTheInjectedEnvironment) {
  EnvLookup env = EnvFromMap({{"TF_CONFIG", kPsWorkerGrpc}});
  auto resolver = TFConfigClusterResolver::FromEnv(env);
  ASSERT_TRUE(resolver.ok()) << resolver.status();
  EXPECT_EQ(*(*resolver)->master(), "grpc://ps1:2222");
}

// By default the local task's GPUs are the CUDA driver's count for this
// process (none on a machine without a driver), as TF counts its local
// devices; an injected environment's CUDA_VISIBLE_DEVICES does not reach the
// driver.
TEST(TFConfigClusterResolverTest, DefaultCountIsTheCudaDriversGpus) {
  absl::StatusOr<int64_t> driver_gpus = CudaDriverGpuCount();
  auto resolver = TFConfigClusterResolver::FromEnv(
      EnvFromMap({{"TF_CONFIG", kPsWorker},
                  {"CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7,8"}}));
  ASSERT_TRUE(resolver.ok()) << resolver.status();
  if (!driver_gpus.ok()) {
    // A driver that cannot start: the resolver says so too.
    EXPECT_EQ((*resolver)->num_accelerators().status().code(),
              driver_gpus.status().code());
    return;
  }
  AcceleratorCounts expected;
  if (*driver_gpus > 0) expected["GPU"] = *driver_gpus;
  EXPECT_EQ(*(*resolver)->num_accelerators(), expected);
  EXPECT_EQ(*(*resolver)->num_accelerators("ps", 0), expected);
}

TEST(TFConfigClusterResolverTest, InjectedAcceleratorCount) {
  TFConfigClusterResolverOptions options;
  options.local_accelerators = []() -> absl::StatusOr<AcceleratorCounts> {
    return AcceleratorCounts{{"TPU", 8}, {"GPU", 0}};
  };
  auto resolver = MustParse(kPsWorker, options);
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->num_accelerators(), (AcceleratorCounts{{"TPU", 8}}));
}

TEST(TFConfigClusterResolverTest, AcceleratorHookErrorsPassThrough) {
  TFConfigClusterResolverOptions options;
  options.local_accelerators = []() -> absl::StatusOr<AcceleratorCounts> {
    return absl::UnavailableError("driver not loaded");
  };
  auto resolver = MustParse(kPsWorker, options);
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->num_accelerators().status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(TFConfigClusterResolverTest, AcceleratorsOfAnotherTaskAreUnimplemented) {
  auto resolver = MustParse(kPsWorker);
  ASSERT_NE(resolver, nullptr);
  absl::Status status = resolver->num_accelerators("worker", 2).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(status.message(),
            "TFConfigClusterResolver counts only the local task's "
            "accelerators (ps:0); it cannot query task worker:2");
  EXPECT_EQ(resolver->num_accelerators("ps", 1).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(TFConfigClusterResolverTest, NegativeTaskIdOverrideIsInvalid) {
  TFConfigClusterResolverOptions options = NoGpus();
  options.task_id = -1;
  absl::Status status =
      TFConfigClusterResolver::FromJson(kPsWorker, options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "TFConfigClusterResolver: the task_id override is -1; a task "
            "index is non-negative");
}

struct BadConfig {
  std::string name;
  std::string tf_config;
  std::string message;
};

class TFConfigErrorTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(TFConfigErrorTest, IsInvalidArgumentNamingTheField) {
  absl::Status status =
      TFConfigClusterResolver::FromJson(GetParam().tf_config, NoGpus())
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, TFConfigErrorTest,
    ::testing::Values(
        BadConfig{"UnclosedObject", R"({"cluster": {"worker": ["w0:2222"]})",
                  "TF_CONFIG is not valid JSON: line 1, column 36: syntax "
                  "error while parsing object - unexpected end of input; "
                  "expected '}'"},
        BadConfig{"SingleQuotes", "{'cluster': {}}",
                  "TF_CONFIG is not valid JSON: line 1, column 2: syntax "
                  "error while parsing object key - invalid literal; last "
                  "read: '{''; expected string literal"},
        BadConfig{"SecondLine",
                  "{\"cluster\": {},\n \"task\": {\"type\" "
                  "\"worker\"}}",
                  "TF_CONFIG is not valid JSON: line 2, column 25: syntax "
                  "error while parsing object separator - unexpected string "
                  "literal; expected ':'"},
        BadConfig{"NotAnObject", R"(["worker"])",
                  "TF_CONFIG must be a JSON object with \"cluster\" and "
                  "\"task\", got array"},
        BadConfig{"ClusterIsAList", R"({"cluster": ["w0:2222"]})",
                  "TF_CONFIG.cluster must be an object mapping job names to "
                  "task lists, got array"},
        BadConfig{"ClusterIsNull", R"({"cluster": null})",
                  "TF_CONFIG.cluster must be an object mapping job names to "
                  "task lists, got null"},
        BadConfig{"JobIsAString", R"({"cluster": {"worker": "w0:2222"}})",
                  "TF_CONFIG.cluster.worker must be a list of \"host:port\" "
                  "strings or an object mapping task indices to them, got "
                  "string"},
        BadConfig{"TaskIsANumber", R"({"cluster": {"worker": ["w0:2222", 8]}})",
                  "TF_CONFIG.cluster.worker[1] must be a \"host:port\" "
                  "string, got number"},
        BadConfig{"SparseTaskIsAList",
                  R"({"cluster": {"worker": {"0": ["w0:2222"]}}})",
                  "TF_CONFIG.cluster.worker.0 must be a \"host:port\" "
                  "string, got array"},
        BadConfig{"SparseKeyNotAnIndex",
                  R"({"cluster": {"worker": {"first": "w0:2222"}}})",
                  "TF_CONFIG.cluster.worker: task index \"first\" is not an "
                  "integer in [0, 2147483647]; key sparse tasks by their "
                  "decimal index"},
        BadConfig{"AddressWithoutPort",
                  R"({"cluster": {"worker": ["worker0"]}})",
                  "TF_CONFIG.cluster.worker[0]: address 'worker0' has no "
                  "port; write it as host:port, e.g. 'worker0:2222'"},
        BadConfig{"BadJobName", R"({"cluster": {"": ["w0:2222"]}})",
                  "TF_CONFIG.cluster.: job name is empty; name each job, "
                  "e.g. \"worker\" or \"ps\""},
        BadConfig{"DuplicateAddress",
                  R"({"cluster": {"ps": ["h:2222"], "worker": ["h:2222"]}})",
                  "TF_CONFIG.cluster: address 'h:2222' is used by both task "
                  "0 of job 'ps' and task 0 of job 'worker'; every task "
                  "needs its own host:port"},
        BadConfig{"TwoChiefs", R"({"cluster": {"chief": ["c0:1", "c1:1"]}})",
                  "TF_CONFIG.cluster.chief has 2 tasks; a cluster has at most "
                  "one chief"},
        BadConfig{"TwoEvaluators",
                  R"({"cluster": {"evaluator": ["e0:1", "e1:1"]}})",
                  "TF_CONFIG.cluster.evaluator has 2 tasks; a cluster has at "
                  "most one evaluator"},
        BadConfig{"TaskIsAString",
                  R"({"cluster": {"worker": ["w0:1"]}, "task": "worker"})",
                  "TF_CONFIG.task must be an object like {\"type\": "
                  "\"worker\", \"index\": 0}, got string"},
        BadConfig{"TaskTypeMissing",
                  R"({"cluster": {"worker": ["w0:1"]}, "task": {"index": 0}})",
                  "TF_CONFIG.task.type is missing; set it to this task's "
                  "job, e.g. \"worker\""},
        BadConfig{"TaskTypeNotAString",
                  R"({"cluster": {"worker": ["w0:1"]},
                      "task": {"type": 123456, "index": 0}})",
                  "TF_CONFIG.task.type must be a string, got number"},
        BadConfig{"TaskTypeNotInCluster",
                  R"({"cluster": {"ps": ["p:1"], "worker": ["w0:1"]},
                      "task": {"type": "chief", "index": 0}})",
                  "TF_CONFIG.task.type 'chief' is not a job of "
                  "TF_CONFIG.cluster (jobs: ps, worker)"},
        BadConfig{"TaskTypeWithoutCluster",
                  R"({"task": {"type": "worker", "index": 0}})",
                  "TF_CONFIG.task.type 'worker' is not a job of "
                  "TF_CONFIG.cluster (which is empty)"},
        BadConfig{"IndexMissing",
                  R"({"cluster": {"worker": ["w0:1"]},
                      "task": {"type": "worker"}})",
                  "TF_CONFIG.task.index is missing; set it to this task's "
                  "index within job 'worker'"},
        BadConfig{"IndexNegative",
                  R"({"cluster": {"worker": ["w0:1"]},
                      "task": {"type": "worker", "index": -1}})",
                  "TF_CONFIG.task.index is -1; a task index is non-negative"},
        BadConfig{"IndexNegativeString",
                  R"({"cluster": {"worker": ["w0:1"]},
                      "task": {"type": "worker", "index": "-2"}})",
                  "TF_CONFIG.task.index is -2; a task index is non-negative"},
        BadConfig{"IndexFraction",
                  R"({"cluster": {"worker": ["w0:1", "w1:1"]},
                      "task": {"type": "worker", "index": 1.5}})",
                  "TF_CONFIG.task.index is 1.5, which is not an integer; give "
                  "the task's index within its job, e.g. 0"},
        BadConfig{"IndexWord",
                  R"({"cluster": {"worker": ["w0:1"]},
                      "task": {"type": "worker", "index": "first"}})",
                  "TF_CONFIG.task.index is \"first\", which is not an "
                  "integer; give the task's index within its job, e.g. 0"},
        BadConfig{"IndexBool",
                  R"({"cluster": {"worker": ["w0:1"]},
                      "task": {"type": "worker", "index": true}})",
                  "TF_CONFIG.task.index must be an integer, got boolean"},
        BadConfig{"IndexOutOfRange",
                  R"({"cluster": {"worker": ["w0:1", "w1:1", "w2:1"]},
                      "task": {"type": "worker", "index": 3}})",
                  "TF_CONFIG.task.index 3 is out of range: job 'worker' has "
                  "tasks 0..2"},
        BadConfig{"IndexNotInSparseJob",
                  R"({"cluster": {"worker": {"1": "w1:1", "4": "w4:1"}},
                      "task": {"type": "worker", "index": 2}})",
                  "TF_CONFIG.task.index 2 is out of range: job 'worker' has "
                  "tasks [1, 4]"},
        BadConfig{"IndexOfEmptyJob",
                  R"({"cluster": {"worker": []},
                      "task": {"type": "worker", "index": 0}})",
                  "TF_CONFIG.task.index 0 is out of range: job 'worker' has "
                  "no tasks"},
        BadConfig{"RpcLayerNotAString", R"({"cluster": {}, "rpc_layer": 5})",
                  "TF_CONFIG.rpc_layer must be a string, got number"},
        BadConfig{"EnvironmentNotAString",
                  R"({"cluster": {}, "environment": ["cloud"]})",
                  "TF_CONFIG.environment must be a string, got array"},
        BadConfig{"SessionMasterNotAString", R"({"session_master": {}})",
                  "TF_CONFIG.session_master must be a string, got object"}),
    [](const ::testing::TestParamInfo<BadConfig>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace cluster
}  // namespace distribute

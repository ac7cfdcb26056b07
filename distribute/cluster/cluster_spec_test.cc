#include "distribute/cluster/cluster_spec.h"

#include <string>

#include "absl/status/status.h"
#include "distribute/cluster/cluster.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace cluster {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ClusterSpec PsWorker() {
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::Create(
      {{"ps", {"ps0:2222", "ps1:2222"}},
       {"worker", {"worker0:2222", "worker1:2222", "worker2:2222"}}});
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

TEST(ClusterSpecTest, EmptyByDefault) {
  ClusterSpec spec;
  EXPECT_TRUE(spec.empty());
  EXPECT_TRUE(spec.jobs().empty());
  EXPECT_EQ(spec.total_tasks(), 0);
  EXPECT_EQ(spec.ToJson(), "{}");
  EXPECT_EQ(spec.DebugString(), "ClusterSpec{}");
  EXPECT_EQ(spec.AsClusterDef().job_size(), 0);
}

TEST(ClusterSpecTest, FingerprintIsStableAndTellsSpecsApart) {
  auto a = ClusterSpec::Create({{"worker", {"w0:1", "w1:1"}}});
  auto same = ClusterSpec::FromJson("{\"worker\": [\"w0:1\", \"w1:1\"]}");
  auto moved = ClusterSpec::Create({{"worker", {"w0:1", "w1:2"}}});
  ASSERT_TRUE(a.ok() && same.ok() && moved.ok());
  EXPECT_EQ(a->Fingerprint().size(), 16u);
  EXPECT_EQ(a->Fingerprint(), same->Fingerprint());
  EXPECT_NE(a->Fingerprint(), moved->Fingerprint());
  // An empty job changes nothing.
  auto with_empty = ClusterSpec::Create(
      {{"worker", {"w0:1", "w1:1"}}, {"ps", std::vector<std::string>{}}});
  ASSERT_TRUE(with_empty.ok()) << with_empty.status();
  EXPECT_EQ(with_empty->Fingerprint(), a->Fingerprint());
  // FNV-1a of the JSON, fixed across processes and builds.
  EXPECT_EQ(ClusterSpec().ToJson(), "{}");
  EXPECT_EQ(ClusterSpec().Fingerprint(), "08f44b07b5901a25");
}

TEST(ClusterSpecTest, DenseJobs) {
  ClusterSpec spec = PsWorker();
  EXPECT_THAT(spec.jobs(), ElementsAre("ps", "worker"));
  EXPECT_EQ(*spec.num_tasks("ps"), 2);
  EXPECT_EQ(*spec.num_tasks("worker"), 3);
  EXPECT_THAT(*spec.task_indices("worker"), ElementsAre(0, 1, 2));
  EXPECT_EQ(*spec.task_address("worker", 1), "worker1:2222");
  EXPECT_EQ(*spec.task_address("ps", 0), "ps0:2222");
  EXPECT_TRUE(spec.is_dense("worker"));
  EXPECT_TRUE(spec.has_job("ps"));
  EXPECT_FALSE(spec.has_job("chief"));
  EXPECT_EQ(spec.total_tasks(), 5);
  EXPECT_THAT(*spec.job_tasks("ps"), ElementsAre("ps0:2222", "ps1:2222"));
}

TEST(ClusterSpecTest, SparseJobs) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::CreateSparse(
      {{"worker", {{1, "worker1:2222"}, {3, "worker3:2222"}}},
       {"ps", {{0, "ps0:2222"}}}});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(*spec->num_tasks("worker"), 2);
  EXPECT_THAT(*spec->task_indices("worker"), ElementsAre(1, 3));
  EXPECT_FALSE(spec->is_dense("worker"));
  EXPECT_TRUE(spec->is_dense("ps"));
  EXPECT_THAT(
      *spec->job_tasks("worker"),
      ElementsAre(std::nullopt, std::optional<std::string>("worker1:2222"),
                  std::nullopt, std::optional<std::string>("worker3:2222")));
  EXPECT_EQ(spec->ToJson(),
            R"({"ps":["ps0:2222"],"worker":{"1":"worker1:2222",)"
            R"("3":"worker3:2222"}})");
  EXPECT_EQ(spec->DebugString(),
            "ClusterSpec{ps: [ps0:2222], worker: {1: worker1:2222, "
            "3: worker3:2222}}");
}

TEST(ClusterSpecTest, AHugeSparseIndexIsReadByIndexNotAsAList) {
  // One task at the largest index: accepted, but not listed densely (2^31
  // slots); its address is read through the sparse accessors.
  absl::StatusOr<ClusterSpec> spec =
      ClusterSpec::FromJson(R"({"w": {"2147483647": "h:1"}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(*spec->num_tasks("w"), 1);
  EXPECT_EQ(*spec->task_address("w", 2147483647), "h:1");
  absl::StatusOr<std::vector<std::optional<std::string>>> list =
      spec->job_tasks("w");
  EXPECT_EQ(list.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(list.status().message(), HasSubstr("task_indices()"));
  // A sparse job within the bound is still listed.
  spec = ClusterSpec::FromJson(R"({"w": {"1048575": "h:1"}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->job_tasks("w")->size(), 1048576u);
}

TEST(ClusterSpecTest, EmptyJobIsAllowed) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::Create({{"worker", {}}});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(*spec->num_tasks("worker"), 0);
  EXPECT_TRUE(spec->job_tasks("worker")->empty());
  EXPECT_EQ(spec->ToJson(), R"({"worker":[]})");
}

TEST(ClusterSpecTest, LookupsOfUnknownJobsAndTasksAreNotFound) {
  ClusterSpec spec = PsWorker();
  EXPECT_EQ(spec.num_tasks("chief").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(spec.num_tasks("chief").status().message(),
            "No such job in cluster: 'chief' (jobs: ps, worker)");
  EXPECT_EQ(spec.task_indices("chief").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(spec.job_tasks("chief").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(spec.task_address("chief", 0).status().code(),
            absl::StatusCode::kNotFound);
  absl::Status missing = spec.task_address("worker", 3).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.message(),
            "No task with index 3 in job 'worker' (its indices: [0, 1, 2])");
  EXPECT_FALSE(spec.is_dense("chief"));
  EXPECT_EQ(ClusterSpec().num_tasks("worker").status().message(),
            "No such job in cluster: 'worker' (the cluster has no jobs)");
}

TEST(ClusterSpecTest, ClusterDefRoundTrip) {
  ClusterSpec spec = PsWorker();
  ClusterDef def = spec.AsClusterDef();
  ASSERT_EQ(def.job_size(), 2);
  EXPECT_EQ(def.job(0).name(), "ps");
  EXPECT_EQ(def.job(1).name(), "worker");
  EXPECT_EQ(def.job(1).tasks().at(2), "worker2:2222");
  absl::StatusOr<ClusterSpec> back = ClusterSpec::FromClusterDef(def);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, spec);
}

TEST(ClusterSpecTest, ClusterDefWithRepeatedJobIsInvalid) {
  ClusterDef def;
  JobDef* a = def.add_job();
  a->set_name("worker");
  (*a->mutable_tasks())[0] = "w0:1";
  JobDef* b = def.add_job();
  b->set_name("worker");
  (*b->mutable_tasks())[1] = "w1:1";
  absl::Status status = ClusterSpec::FromClusterDef(def).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("names job 'worker' twice"));
}

TEST(ClusterSpecTest, ClusterDefWithNegativeIndexIsInvalid) {
  ClusterDef def;
  JobDef* job = def.add_job();
  job->set_name("worker");
  (*job->mutable_tasks())[-1] = "w0:1";
  absl::Status status = ClusterSpec::FromClusterDef(def).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "job 'worker' has task index -1, outside [0, 2147483647]; task "
            "indices are non-negative");
}

TEST(ClusterSpecTest, JsonRoundTrip) {
  for (const ClusterSpec& spec :
       {PsWorker(), ClusterSpec(),
        *ClusterSpec::CreateSparse({{"worker", {{2, "w2:1"}, {5, "w5:1"}}},
                                    {"chief", {{0, "c:1"}}}})}) {
    absl::StatusOr<ClusterSpec> back = ClusterSpec::FromJson(spec.ToJson());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, spec) << spec.ToJson();
  }
}

TEST(ClusterSpecTest, FromJsonListAndDictJobs) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::FromJson(
      R"({"worker": ["w0:2222", "w1:2222"], "ps": {"0": "ps0:2222",
          "4": "ps4:2222"}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(*spec->task_indices("ps"), ElementsAre(0, 4));
  EXPECT_EQ(*spec->task_address("worker", 1), "w1:2222");
}

TEST(ClusterSpecTest, Equality) {
  EXPECT_EQ(PsWorker(), PsWorker());
  absl::StatusOr<ClusterSpec> other =
      ClusterSpec::Create({{"ps", {"ps0:2222", "ps1:2222"}}});
  EXPECT_NE(PsWorker(), *other);
  // Dense and sparse forms of the same tasks are the same cluster.
  EXPECT_EQ(*ClusterSpec::Create({{"ps", {"a:1", "b:1"}}}),
            *ClusterSpec::CreateSparse({{"ps", {{0, "a:1"}, {1, "b:1"}}}}));
}

TEST(ClusterSpecTest, IpV6Addresses) {
  absl::StatusOr<ClusterSpec> spec =
      ClusterSpec::Create({{"worker", {"[::1]:2222", "[fe80::1%eth0]:80"}}});
  EXPECT_TRUE(spec.ok()) << spec.status();
}

struct InvalidSpec {
  std::map<std::string, ClusterSpec::JobTasks> jobs;
  std::string message;
};

class ClusterSpecValidationTest : public ::testing::TestWithParam<InvalidSpec> {
};

TEST_P(ClusterSpecValidationTest, IsInvalidArgumentNamingTheProblem) {
  absl::Status status = ClusterSpec::CreateSparse(GetParam().jobs).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Invalid, ClusterSpecValidationTest,
    ::testing::Values(
        InvalidSpec{{{"", {{0, "a:1"}}}},
                    "job name is empty; name each job, e.g. \"worker\" or "
                    "\"ps\""},
        InvalidSpec{{{"1worker", {{0, "a:1"}}}},
                    "job name '1worker' must start with a letter (job names "
                    "match [A-Za-z][A-Za-z0-9_]*, as in \"/job:worker\")"},
        InvalidSpec{{{"my-job", {{0, "a:1"}}}},
                    "job name 'my-job' contains '-'; job names match "
                    "[A-Za-z][A-Za-z0-9_]*"},
        InvalidSpec{{{"job/x", {{0, "a:1"}}}},
                    "job name 'job/x' contains '/'; job names match "
                    "[A-Za-z][A-Za-z0-9_]*"},
        InvalidSpec{{{"worker", {{-2, "a:1"}}}},
                    "job 'worker' has task index -2, outside [0, 2147483647]; "
                    "task indices are non-negative"},
        InvalidSpec{{{"worker", {{int64_t{1} << 31, "a:1"}}}},
                    "job 'worker' has task index 2147483648, outside "
                    "[0, 2147483647]; task indices are non-negative"},
        InvalidSpec{{{"worker", {{0, "a:1"}, {1, "worker1"}}}},
                    "task 1 of job 'worker': address 'worker1' has no port; "
                    "write it as host:port, e.g. 'worker1:2222'"},
        InvalidSpec{{{"worker", {{0, ""}}}},
                    "task 0 of job 'worker': address is empty; give it as "
                    "host:port, e.g. \"worker0:2222\""},
        InvalidSpec{{{"worker", {{0, ":2222"}}}},
                    "task 0 of job 'worker': address ':2222' has an empty "
                    "host; write it as host:port"},
        InvalidSpec{{{"worker", {{0, "host:"}}}},
                    "task 0 of job 'worker': address 'host:' has port '', "
                    "which is not a number in [0, 65535]"},
        InvalidSpec{{{"worker", {{0, "host:http"}}}},
                    "task 0 of job 'worker': address 'host:http' has port "
                    "'http', which is not a number in [0, 65535]"},
        InvalidSpec{{{"worker", {{0, "host:65536"}}}},
                    "task 0 of job 'worker': address 'host:65536' has port "
                    "'65536', which is not a number in [0, 65535]"},
        InvalidSpec{{{"worker", {{0, "a b:1"}}}},
                    "task 0 of job 'worker': address 'a b:1' has host 'a b' "
                    "containing ' '; a host is a name or IPv4 address "
                    "([A-Za-z0-9._-]) or a bracketed IPv6 address"},
        InvalidSpec{{{"worker", {{0, "::1:80"}}}},
                    "task 0 of job 'worker': address '::1:80' has host '::1' "
                    "containing ':'; a host is a name or IPv4 address "
                    "([A-Za-z0-9._-]) or a bracketed IPv6 address"},
        InvalidSpec{{{"worker", {{0, "[::1"}}}},
                    "task 0 of job 'worker': address '[::1' opens an IPv6 "
                    "host with '[' but has no ']'; write it as "
                    "[v6-address]:port"},
        InvalidSpec{{{"worker", {{0, "[::1]"}}}},
                    "task 0 of job 'worker': address '[::1]' has no port; "
                    "write it as [v6-address]:port"},
        InvalidSpec{
            {{"ps", {{0, "h:1"}}}, {"worker", {{0, "h:2"}, {1, "h:1"}}}},
            "address 'h:1' is used by both task 0 of job 'ps' and "
            "task 1 of job 'worker'; every task needs its own "
            "host:port"}));

struct InvalidJson {
  std::string json;
  std::string message;
};

class ClusterSpecJsonTest : public ::testing::TestWithParam<InvalidJson> {};

TEST_P(ClusterSpecJsonTest, IsInvalidArgumentNamingTheField) {
  absl::Status status = ClusterSpec::FromJson(GetParam().json).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Invalid, ClusterSpecJsonTest,
    ::testing::Values(
        InvalidJson{"{\"worker\": [\"a:1\",]}",
                    "cluster spec is not valid JSON: line 1, column 19: "
                    "syntax error while parsing value - unexpected ']'; "
                    "expected '[', '{', or a literal"},
        InvalidJson{"[\"a:1\"]",
                    "cluster spec must be an object mapping job names to "
                    "task lists, got array"},
        InvalidJson{R"({"worker": "a:1"})",
                    "cluster spec.worker must be a list of \"host:port\" "
                    "strings or an object mapping task indices to them, got "
                    "string"},
        InvalidJson{R"({"worker": ["a:1", 7]})",
                    "cluster spec.worker[1] must be a \"host:port\" string, "
                    "got number"},
        InvalidJson{R"({"worker": {"0": "a:1", "1": null}})",
                    "cluster spec.worker.1 must be a \"host:port\" string, "
                    "got null"},
        InvalidJson{R"({"worker": {"-1": "a:1"}})",
                    "cluster spec.worker: task index \"-1\" is not an "
                    "integer in [0, 2147483647]; key sparse tasks by their "
                    "decimal index"},
        InvalidJson{R"({"worker": {"one": "a:1"}})",
                    "cluster spec.worker: task index \"one\" is not an "
                    "integer in [0, 2147483647]; key sparse tasks by their "
                    "decimal index"},
        InvalidJson{R"({"worker": {"1": "a:1", "01": "b:1"}})",
                    "cluster spec.worker: task index 1 is given twice"},
        InvalidJson{R"({"worker": ["a:1", "b"]})",
                    "cluster spec.worker[1]: address 'b' has no port; write "
                    "it as host:port, e.g. 'b:2222'"},
        InvalidJson{R"({"bad name": ["a:1"]})",
                    "cluster spec.bad name: job name 'bad name' contains ' '; "
                    "job names match [A-Za-z][A-Za-z0-9_]*"},
        InvalidJson{R"({"ps": ["a:1"], "worker": ["a:1"]})",
                    "cluster spec: address 'a:1' is used by both task 0 of "
                    "job 'ps' and task 0 of job 'worker'; every task needs "
                    "its own host:port"}));

}  // namespace
}  // namespace cluster
}  // namespace distribute

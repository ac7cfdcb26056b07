// multi_worker_util with TF's answers (tensorflow/python/distribute/
// multi_worker_util_test.py's cases) and its checks.
#include "distribute/cluster/multi_worker_util.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace cluster {
namespace {

using ::testing::HasSubstr;

ClusterSpec Spec(const std::map<std::string, std::vector<std::string>>& jobs) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::Create(jobs);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : ClusterSpec();
}

TEST(MultiWorkerUtilTest, IsChief) {
  const ClusterSpec with_chief =
      Spec({{"chief", {"c:1"}}, {"worker", {"w:1", "w:2"}}, {"ps", {"p:1"}}});
  EXPECT_TRUE(*IsChief(with_chief, "chief", 0));
  EXPECT_FALSE(*IsChief(with_chief, "worker", 0));
  EXPECT_FALSE(*IsChief(with_chief, "ps", 0));
  const ClusterSpec workers = Spec({{"worker", {"w:1", "w:2"}}});
  EXPECT_TRUE(*IsChief(workers, "worker", 0));
  EXPECT_FALSE(*IsChief(workers, "worker", 1));
  // The evaluator is a cluster of its own, and its chief.
  EXPECT_TRUE(*IsChief(workers, "evaluator", 0));
  EXPECT_FALSE(*IsChief(workers, "", 0));
}

TEST(MultiWorkerUtilTest, WorkerCountAndIds) {
  const ClusterSpec spec = Spec({{"chief", {"c:1"}},
                                 {"worker", {"w:1", "w:2", "w:3"}},
                                 {"evaluator", {"e:1"}},
                                 {"ps", {"p:1", "p:2"}}});
  EXPECT_EQ(*WorkerCount(spec, "chief"), 4);
  EXPECT_EQ(*WorkerCount(spec, "worker"), 4);
  EXPECT_EQ(*WorkerCount(spec, "evaluator"), 1);
  EXPECT_EQ(WorkerCount(spec, "ps").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*IdInCluster(spec, "chief", 0), 0);
  EXPECT_EQ(*IdInCluster(spec, "worker", 0), 1);
  EXPECT_EQ(*IdInCluster(spec, "worker", 2), 3);
  EXPECT_EQ(*IdInCluster(spec, "evaluator", 0), 0);
  absl::StatusOr<int64_t> ps = IdInCluster(spec, "ps", 1);
  EXPECT_EQ(ps.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ps.status().message(), HasSubstr("no id in the cluster"));
  const ClusterSpec no_chief = Spec({{"worker", {"w:1", "w:2"}}});
  EXPECT_EQ(*WorkerCount(no_chief, "worker"), 2);
  EXPECT_EQ(*IdInCluster(no_chief, "worker", 1), 1);
}

TEST(MultiWorkerUtilTest, Leaders) {
  const ClusterSpec with_chief =
      Spec({{"chief", {"c:1"}}, {"worker", {"w:1"}}, {"ps", {"p:1"}}});
  EXPECT_EQ(*CollectiveLeader(with_chief, "worker", 0),
            "/job:chief/replica:0/task:0");
  EXPECT_EQ(*CollectiveLeader(with_chief, "evaluator", 0), "");
  EXPECT_EQ(*CoordinationLeader(with_chief), "/job:ps/replica:0/task:0");
  const ClusterSpec workers = Spec({{"worker", {"w:1", "w:2"}}});
  EXPECT_EQ(*CollectiveLeader(workers, "worker", 1),
            "/job:worker/replica:0/task:0");
  EXPECT_EQ(*CoordinationLeader(workers), "/job:worker/replica:0/task:0");
  EXPECT_EQ(*CollectiveLeader(ClusterSpec(), "", 0), "");
  EXPECT_EQ(*CoordinationLeader(ClusterSpec()), "");
}

TEST(MultiWorkerUtilTest, ChecksNameWhatIsWrong) {
  struct Case {
    std::map<std::string, std::vector<std::string>> jobs;
    std::string task_type;
    int64_t task_id;
    std::string message;
  };
  const Case cases[] = {
      {{{"worker", {"w:1"}}, {"trainer", {"t:1"}}},
       "worker",
       0,
       "job \"trainer\""},
      {{{"worker", {"w:1"}}}, "driver", 0, "unrecognized task type \"driver\""},
      {{{"worker", {"w:1"}}}, "ps", 0, "\"ps\" is not a job"},
      {{{"chief", {"c:1", "c:2"}}, {"worker", {"w:1"}}},
       "worker",
       0,
       "at most one chief"},
      {{{"evaluator", {"e:1", "e:2"}}, {"worker", {"w:1"}}},
       "worker",
       0,
       "at most one evaluator"},
      {{{"worker", {"w:1", "w:2"}}}, "worker", 2, "exceeds the largest id"},
      {{{"worker", {"w:1"}}}, "worker", -1, "negative"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<bool> chief = IsChief(Spec(c.jobs), c.task_type, c.task_id);
    EXPECT_EQ(chief.status().code(), absl::StatusCode::kInvalidArgument)
        << c.message;
    EXPECT_THAT(chief.status().message(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace cluster
}  // namespace distribute

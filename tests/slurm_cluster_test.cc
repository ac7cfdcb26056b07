// `distsim train` under a real Slurm: the test starts a one-node Slurm of
// its own (slurmctld and slurmd in the foreground, configured in a fresh
// directory: auth/none, ports of their own, the node's CPUs) and runs
// `srun -n 2 distsim train --strategy=multi_worker_mirrored ...` in it. The
// two tasks find each other through the SLURM_* variables Slurm gives them
// (SlurmClusterResolver) and train to the weights of the same two workers
// started with TF_CONFIG. Needs root (slurmd launches the tasks) and
// Debian's slurmctld, slurmd and slurm-client, which tools/bazel installs;
// without them the test says so and skips. Every daemon is stopped at the
// end (ChildProcess kills and reaps what still runs).
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/subprocess.h"

namespace {

using ::distsim_test::ChildProcess;
using ::distsim_test::JsonField;
using ::distsim_test::Runfile;
using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(120);

// The JSON lines (the results) among `out`'s lines.
std::vector<std::string> ResultLines(const std::string& out) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (absl::StartsWith(line, "{\"strategy\"")) lines.emplace_back(line);
  }
  return lines;
}

std::vector<std::string> TrainArgs() {
  return {"train",
          "--strategy=multi_worker_mirrored",
          "--platform=host:1",
          "--replicas=1",
          "--steps=3",
          "--global_batch=32",
          "--timeout_seconds=60",
          "--json"};
}

// A directory with a short path: slurmd puts the steps' Unix sockets in
// its spool directory, and a socket's path must fit in 108 bytes.
class ShortTempDir {
 public:
  ShortTempDir() {
    char name[] = "/tmp/distsim-slurm-XXXXXX";
    if (mkdtemp(name) != nullptr) path_ = name;
  }
  ~ShortTempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(SlurmClusterTest, SrunWorkersTrainLikeTfConfigWorkers) {
  for (const char* tool :
       {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/srun"}) {
    if (access(tool, X_OK) != 0) {
      GTEST_SKIP() << tool
                   << " is missing: install Debian's slurmctld, slurmd and "
                      "slurm-client (tools/bazel installs them)";
    }
  }
  if (geteuid() != 0) {
    GTEST_SKIP() << "a one-node Slurm needs root (slurmd starts the tasks); "
                    "run the test as root, as CI does";
  }
  ShortTempDir dir;
  ASSERT_FALSE(dir.path().empty()) << "mkdtemp failed";
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(2);
  ASSERT_TRUE(ports.ok()) << ports.status();
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  // The short host name: what slurmd calls this node.
  std::string node = host;
  node = node.substr(0, node.find('.'));
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const std::string conf = absl::StrCat(dir.path(), "/slurm.conf");
  {
    std::FILE* f = std::fopen(conf.c_str(), "w");
    ASSERT_NE(f, nullptr);
    const std::string d = dir.path();
    const std::string text = absl::StrCat(
        "ClusterName=distsim\n", "SlurmctldHost=", node, "(127.0.0.1)\n",
        "AuthType=auth/none\nCredType=cred/none\n",
        "SlurmUser=root\nSlurmdUser=root\n", "SlurmctldPort=", (*ports)[0],
        "\n", "SlurmdPort=", (*ports)[1], "\n", "StateSaveLocation=", d,
        "/state\n", "SlurmdSpoolDir=", d, "/spool\n", "SlurmctldPidFile=", d,
        "/slurmctld.pid\n", "SlurmdPidFile=", d, "/slurmd.pid\n",
        "SlurmctldLogFile=", d, "/slurmctld.log\n", "SlurmdLogFile=", d,
        "/slurmd.log\n",
        "ProctrackType=proctrack/pgid\nTaskPlugin=task/none\n"
        "SwitchType=switch/none\nMpiDefault=none\nReturnToService=2\n"
        "SchedulerType=sched/builtin\nSelectType=select/cons_tres\n"
        "SelectTypeParameters=CR_CPU\nJobAcctGatherType=jobacct_gather/none\n"
        "AccountingStorageType=accounting_storage/none\n",
        "NodeName=", node, " NodeAddr=127.0.0.1 CPUs=", cpus,
        " State=UNKNOWN\n", "PartitionName=debug Nodes=", node,
        " Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n");
    ASSERT_EQ(std::fwrite(text.data(), 1, text.size(), f), text.size());
    std::fclose(f);
  }
  std::filesystem::create_directories(dir.path() + "/state");
  std::filesystem::create_directories(dir.path() + "/spool");
  const std::vector<std::pair<std::string, std::string>> env = {
      {"SLURM_CONF", conf}};
  auto controller = ChildProcess::Spawn("/usr/sbin/slurmctld", {"-D"}, env,
                                        dir.path() + "/slurmctld");
  ASSERT_TRUE(controller.ok()) << controller.status();
  auto daemon = ChildProcess::Spawn("/usr/sbin/slurmd", {"-D", "-N", node}, env,
                                    dir.path() + "/slurmd");
  ASSERT_TRUE(daemon.ok()) << daemon.status();

  // The node is up once sinfo calls it idle.
  const absl::Time deadline = absl::Now() + kWait;
  std::string state;
  while (absl::Now() < deadline) {
    auto sinfo = distsim_test::RunToEnd("/usr/bin/sinfo", {"-h", "-o", "%t"},
                                        dir.path() + "/sinfo", kWait, env);
    ASSERT_TRUE(sinfo.ok()) << sinfo.status();
    state = std::string(absl::StripAsciiWhitespace(sinfo->out));
    if (state == "idle") break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  ASSERT_EQ(state, "idle") << "slurmd did not come up; its log:\n"
                           << (*daemon)->Stderr();

  absl::StatusOr<int> base = distsim_test::FreePortRange(2);
  ASSERT_TRUE(base.ok()) << base.status();
  std::vector<std::string> srun_args = {"-n", "2", "--kill-on-bad-exit=1",
                                        Runfile("tools/distsim/distsim")};
  for (const std::string& arg : TrainArgs()) srun_args.push_back(arg);
  srun_args.push_back(absl::StrCat("--slurm_port_base=", *base));
  auto srun = distsim_test::RunToEnd("/usr/bin/srun", srun_args,
                                     dir.path() + "/srun", kWait, env);
  ASSERT_TRUE(srun.ok()) << srun.status();
  ASSERT_TRUE(srun->ok()) << srun->err;
  std::vector<std::string> results = ResultLines(srun->out);
  ASSERT_EQ(results.size(), 2u) << srun->out;
  std::vector<std::string> indices;
  for (const std::string& line : results) {
    EXPECT_EQ(JsonField(line, "num_workers"), "2") << line;
    indices.push_back(JsonField(line, "worker_index"));
  }
  EXPECT_THAT(indices, ::testing::UnorderedElementsAre("0", "1"));
  EXPECT_EQ(JsonField(results[0], "weights_checksum"),
            JsonField(results[1], "weights_checksum"));
  EXPECT_THAT(srun->out, HasSubstr("(worker 1 of 2)"));

  // The same two workers with TF_CONFIG, without Slurm.
  absl::StatusOr<std::vector<int>> worker_ports = distsim_test::FreePorts(2);
  ASSERT_TRUE(worker_ports.ok()) << worker_ports.status();
  const std::string cluster =
      absl::StrCat("{\"worker\": [\"127.0.0.1:", (*worker_ports)[0],
                   "\", \"127.0.0.1:", (*worker_ports)[1], "\"]}");
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int w = 0; w < 2; ++w) {
    auto child = ChildProcess::Spawn(
        Runfile("tools/distsim/distsim"), TrainArgs(),
        {{"TF_CONFIG", distsim_test::TfConfig(cluster, "worker", w)}},
        distsim_test::TestTmpPath(absl::StrCat("tf_config", w)));
    ASSERT_TRUE(child.ok()) << child.status();
    workers.push_back(*std::move(child));
  }
  for (auto& worker : workers) {
    auto exit = worker->Wait(kWait);
    ASSERT_TRUE(exit.ok()) << exit.status();
    ASSERT_TRUE(exit->exited && exit->code == 0) << worker->Stderr();
  }
  const std::vector<std::string> reference = ResultLines(workers[0]->Stdout());
  ASSERT_EQ(reference.size(), 1u);
  EXPECT_EQ(JsonField(results[0], "weights_checksum"),
            JsonField(reference[0], "weights_checksum"));
}

}  // namespace

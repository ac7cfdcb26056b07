// `distsim train`, the binary, where training cannot go on: a loss that
// diverges stops the run naming the step; a --trace path that cannot be
// written fails before the first step; progress lines reach a file as they
// are printed, so a run stopped by a signal has printed every step it
// finished. Every child is waited for with a deadline and reaped.
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "devices/host_platform.h"
#include "distribute/one_device_strategy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/subprocess.h"
#include "tools/distsim/classifier_training.h"
#include "tools/distsim/ps_training.h"

namespace {

using ::distsim_test::ChildProcess;
using ::distsim_test::ExitInfo;
using ::distsim_test::Runfile;
using ::distsim_test::TestTmpPath;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kWait = absl::Seconds(90);

std::string Distsim() { return Runfile("tools/distsim/distsim"); }

distsim_test::Finished RunDistsim(const std::vector<std::string>& args,
                                  const std::string& name) {
  absl::StatusOr<distsim_test::Finished> ran =
      distsim_test::RunToEnd(Distsim(), args, TestTmpPath(name), kWait);
  EXPECT_TRUE(ran.ok()) << ran.status();
  return ran.ok() ? *ran : distsim_test::Finished{};
}

// A learning rate of 1e30 blows the weights up within a few steps: the run
// prints the steps it took, then fails naming the step whose loss is not
// finite, and prints no results (no JSON line with a NaN in it).
TEST(DistsimTrainTest, DivergingLossStopsNamingTheStep) {
  const distsim_test::Finished ran = RunDistsim(
      {"train", "--strategy=one_device", "--platform=host", "--steps=50",
       "--global_batch=32", "--learning_rate=1e30", "--json"},
      "diverge");
  EXPECT_TRUE(ran.exit.exited && ran.exit.code == 1) << ran.err;
  EXPECT_THAT(ran.err, HasSubstr("the model diverged")) << ran.err;
  EXPECT_THAT(ran.err, HasSubstr("at step ")) << ran.err;
  EXPECT_THAT(ran.err, HasSubstr("of 50")) << ran.err;
  EXPECT_THAT(ran.out, HasSubstr("step    1/50")) << ran.out;
  EXPECT_THAT(ran.out, Not(HasSubstr("step   50/50"))) << ran.out;
  EXPECT_THAT(ran.out, Not(HasSubstr("\"final_loss\""))) << ran.out;
}

TEST(DistsimTrainTest, UnwritableTraceFailsBeforeTraining) {
  const std::string dir = TestTmpPath("no_such_dir");
  const distsim_test::Finished ran =
      RunDistsim({"train", "--platform=sim:dgx_h100", "--steps=3",
                  absl::StrCat("--trace=", dir, "/sub/t.json")},
                 "trace");
  EXPECT_TRUE(ran.exit.exited && ran.exit.code == 2) << ran.err;
  EXPECT_THAT(ran.err, HasSubstr("--trace=")) << ran.err;
  EXPECT_THAT(ran.err, HasSubstr("cannot write there")) << ran.err;
  EXPECT_THAT(ran.out, Not(HasSubstr("step "))) << ran.out;
}

// The CLI's own conventions: `distsim --help` lists the subcommands,
// `distsim help CMD` shows CMD's flags, a bad flag or value exits 2 (a usage
// error), a failure while running exits 1.
TEST(DistsimCliTest, HelpAndExitStatus) {
  const distsim_test::Finished list = RunDistsim({"--help"}, "help");
  EXPECT_TRUE(list.ok()) << list.err;
  EXPECT_THAT(list.out, HasSubstr("collective"));
  EXPECT_THAT(list.out, HasSubstr("validate"));
  const distsim_test::Finished flags =
      RunDistsim({"help", "collective"}, "help_collective");
  EXPECT_TRUE(flags.ok()) << flags.err;
  EXPECT_THAT(flags.out + flags.err, HasSubstr("--topology"));
  for (const std::vector<std::string>& usage :
       {std::vector<std::string>{"collective", "--json", "--csv"},
        std::vector<std::string>{"collective", "--no_such_flag=1"},
        std::vector<std::string>{"no_such_command"}}) {
    const distsim_test::Finished bad = RunDistsim(usage, "usage");
    EXPECT_TRUE(bad.exit.exited && bad.exit.code == 2)
        << usage[0] << ": " << bad.err;
  }
  // A run that fails for another reason (it diverged).
  const distsim_test::Finished failed =
      RunDistsim({"train", "--strategy=one_device", "--platform=host",
                  "--steps=50", "--global_batch=32", "--learning_rate=1e30"},
                 "runtime");
  EXPECT_TRUE(failed.exit.exited && failed.exit.code == 1) << failed.err;
}

// `validate --fit_out` writes constants that `collective --nccl_model`
// reads, and they change its predictions; --nccl_model with a schedule
// algorithm is refused, naming the flag.
TEST(DistsimCliTest, FittedConstantsFeedTheNcclModel) {
  const std::string constants = TestTmpPath("fitted_constants.txt");
  const distsim_test::Finished fit =
      RunDistsim({"validate", "--split=fit", "--fit=simple_efficiency.net",
                  "--fit_prior=0", absl::StrCat("--fit_out=", constants)},
                 "fit");
  ASSERT_TRUE(fit.exit.exited && fit.exit.code == 0) << fit.err;
  EXPECT_THAT(fit.out, HasSubstr("# fitted on the ")) << fit.out;
  EXPECT_THAT(fit.out, HasSubstr("simple_efficiency.net = ")) << fit.out;
  std::ifstream in(constants);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("simple_efficiency.net = "));

  auto busbw = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        "collective",          "--topology=dgx_h100",
        "--algorithm=nccl",    "--nccl_algo=ring",
        "--nccl_proto=simple", "--min_bytes=1G",
        "--max_bytes=1G",      "--csv"};
    args.insert(args.end(), extra.begin(), extra.end());
    const distsim_test::Finished ran = RunDistsim(args, "collective");
    EXPECT_TRUE(ran.exit.exited && ran.exit.code == 0) << ran.err;
    // The last field of the row is the algorithm; busbw is before it.
    std::vector<std::string> lines =
        absl::StrSplit(ran.out, '\n', absl::SkipEmpty());
    std::vector<std::string> fields = absl::StrSplit(lines.back(), ',');
    double value = 0;
    EXPECT_TRUE(fields.size() >= 2 &&
                absl::SimpleAtod(fields[fields.size() - 2], &value))
        << ran.out;
    return value;
  };
  const std::string half = TestTmpPath("half_nvlink.txt");
  std::ofstream(half) << "# half the NVLink share\n"
                      << "simple_efficiency.nvlink = 0.41\n";
  const double base = busbw({});
  const double slow = busbw({absl::StrCat("--nccl_model=", half)});
  EXPECT_NEAR(slow / base, 0.5, 0.03) << base << " " << slow;
  EXPECT_GT(busbw({absl::StrCat("--nccl_model=", constants)}), 0);

  // A fit that fails leaves an existing --fit_out file as it was.
  const distsim_test::Finished bad_fit =
      RunDistsim({"validate", "--fit=no_such_constant", "--fit_prior=0",
                  absl::StrCat("--fit_out=", half)},
                 "bad_fit");
  EXPECT_FALSE(bad_fit.exit.exited && bad_fit.exit.code == 0);
  EXPECT_THAT(bad_fit.err, HasSubstr("no_such_constant")) << bad_fit.err;
  std::ifstream kept(half);
  std::stringstream kept_text;
  kept_text << kept.rdbuf();
  EXPECT_THAT(kept_text.str(), HasSubstr("simple_efficiency.nvlink = 0.41"));

  const distsim_test::Finished refused =
      RunDistsim({"collective", "--topology=dgx_h100", "--algorithm=ring",
                  absl::StrCat("--nccl_model=", half)},
                 "refused");
  EXPECT_FALSE(refused.exit.exited && refused.exit.code == 0);
  EXPECT_THAT(refused.err, HasSubstr("--nccl_model")) << refused.err;
}

// stdout is a file here (as under Slurm or `| tee`): once the output shows
// step 3, a SIGTERM leaves every printed line whole, the last one
// included, and the steps in order.
TEST(DistsimTrainTest, ProgressLinesReachAFileAsPrinted) {
  auto child =
      ChildProcess::Spawn(Distsim(),
                          {"train", "--strategy=one_device", "--platform=host",
                           "--steps=100000000", "--global_batch=32"},
                          {}, TestTmpPath("progress"));
  ASSERT_TRUE(child.ok()) << child.status();
  const absl::Time deadline = absl::Now() + kWait;
  while (!absl::StrContains((*child)->Stdout(), "step    3/") &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_THAT((*child)->Stdout(), HasSubstr("step    3/"))
      << "no step line reached the file within " << kWait;
  ASSERT_EQ(kill((*child)->pid(), SIGTERM), 0);
  absl::StatusOr<ExitInfo> exit = (*child)->Wait(kWait);
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_FALSE(exit->exited);
  EXPECT_EQ(exit->signal, SIGTERM);
  const std::string out = (*child)->Stdout();
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\n')
      << "a line was cut: ..."
      << out.substr(out.size() > 200 ? out.size() - 200 : 0);
  int64_t expected = 1;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    if (!absl::StartsWith(line, "step ")) continue;
    EXPECT_THAT(std::string(line),
                HasSubstr(absl::StrCat(" ", expected, "/100000000")));
    ++expected;
  }
  EXPECT_GE(expected, 4);
}

}  // namespace

namespace {

// Asynchronous training on a parameter-server cluster of this process (2
// workers, 1 ps task): the losses differ run to run, but the model learns:
// on examples it never trained on, its loss ends well below the initial
// weights' (ln 10 = 2.30 for 10 classes).
TEST(ParameterServerTrainingTest, AsynchronousTrainingConverges) {
  distsim::TrainOptions options;
  options.steps = 80;
  options.global_batch = 64;
  absl::StatusOr<distsim::TrainResult> result =
      distsim::TrainClassifierOnParameterServers(options, 2, 1);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->weights.size(), 6u);
  absl::StatusOr<double> trained =
      distsim::EvaluateClassifier(options, result->weights);
  ASSERT_TRUE(trained.ok()) << trained.status();
  EXPECT_LT(*trained, 1.6) << "initial loss " << *result->initial_loss;
  EXPECT_GT(*result->initial_loss, 2.0);

  EXPECT_EQ(
      distsim::TrainClassifierOnParameterServers(options, 0, 1).status().code(),
      absl::StatusCode::kInvalidArgument);
}

// The same cluster on simulated hosts (2 workers and a ps host of
// sim:dgx_h100_cluster:3): it learns, and is deterministic: the same
// command gives the same losses, weights and simulated time.
TEST(ParameterServerTrainingTest, OnSimulatedHostsItLearnsAndRepeats) {
  const std::vector<std::string> args = {"train",
                                         "--strategy=parameter_server",
                                         "--platform=sim:dgx_h100_cluster:3",
                                         "--steps=80",
                                         "--global_batch=64",
                                         "--json"};
  const distsim_test::Finished first = RunDistsim(args, "ps_sim_1");
  ASSERT_TRUE(first.exit.exited && first.exit.code == 0) << first.err;
  const distsim_test::Finished second = RunDistsim(args, "ps_sim_2");
  ASSERT_TRUE(second.exit.exited && second.exit.code == 0) << second.err;
  EXPECT_EQ(first.out, second.out);
  EXPECT_THAT(first.out, HasSubstr("2 worker host(s) and 1 ps host(s)"));
  EXPECT_THAT(first.out, HasSubstr("simulated: 80 steps in "));
  std::vector<std::string> lines =
      absl::StrSplit(first.out, '\n', absl::SkipEmpty());
  ASSERT_FALSE(lines.empty());
  const std::string& json = lines.back();
  EXPECT_THAT(json, HasSubstr("\"strategy\":\"parameter_server\""));
  EXPECT_THAT(json, Not(HasSubstr("\"simulated_step_us\":null")));
  double initial = 0, final_loss = 0;
  ASSERT_TRUE(
      absl::SimpleAtod(distsim_test::JsonField(json, "initial_loss"), &initial))
      << json;
  ASSERT_TRUE(absl::SimpleAtod(distsim_test::JsonField(json, "final_loss"),
                               &final_loss))
      << json;
  EXPECT_GT(initial, 2.0);
  EXPECT_LT(final_loss, 1.6);

  // A ps task and two workers need three hosts.
  const distsim_test::Finished small = RunDistsim(
      {"train", "--strategy=parameter_server",
       "--platform=sim:dgx_h100_cluster:2", "--num_workers=2", "--steps=2"},
      "ps_sim_small");
  EXPECT_FALSE(small.exit.exited && small.exit.code == 0);
  EXPECT_THAT(small.err, HasSubstr("it has 2 host(s)")) << small.err;
  const distsim_test::Finished cuda = RunDistsim(
      {"train", "--strategy=parameter_server", "--platform=cuda", "--steps=2"},
      "ps_cuda");
  EXPECT_FALSE(cuda.exit.exited && cuda.exit.code == 0);
  EXPECT_THAT(cuda.err, HasSubstr("simulated hosts")) << cuda.err;
}

}  // namespace

namespace {

// A side-car evaluator pointed at the checkpoints of another model (one
// layer fewer: a parameter its model needs is missing) says so at once
// rather than polling for a checkpoint it could read.
TEST(SidecarEvaluationTest, ACheckpointOfAnotherModelIsAnError) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir =
      std::string(tmp == nullptr ? "/tmp" : tmp) + "/other_model_ckpt";
  devices::HostPlatformOptions host;
  auto platform = devices::HostPlatform::Create(host);
  ASSERT_TRUE(platform.ok()) << platform.status();
  auto strategy = distribute::OneDeviceStrategy::Create(**platform, "/cpu:0");
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  distsim::TrainOptions trained;
  trained.steps = 2;
  trained.global_batch = 8;
  trained.hidden = {8};
  trained.checkpoint_dir = dir;
  trained.checkpoint_every = 1;
  ASSERT_TRUE(distsim::TrainClassifier(**strategy, trained).ok());

  distsim::TrainOptions evaluated = trained;
  // The same first two layers and one more, which the file lacks.
  evaluated.hidden = {8, 10};
  absl::StatusOr<std::vector<distsim::EvaluationReport>> reports =
      distsim::RunSidecarEvaluation(evaluated, {});
  EXPECT_EQ(reports.status().code(), absl::StatusCode::kNotFound)
      << reports.status();
}

}  // namespace

// ParameterServerStrategy on a simulated cluster inside one process
// (distribute/ps/in_process_ps.h over sim:dgx_h100_cluster:4): two workers
// on hosts 0 and 1, ps tasks on the CPUs of hosts 2 and 3. Steps written
// against the Strategy API run on whichever worker is free in simulated
// time, every update counts, the reads and updates cost simulated network
// time, and two runs give the same assignment, values and trace.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/partitioners.h"
#include "distribute/ps/in_process_ps.h"
#include "distribute/ps/parameter_server_strategy.h"
#include "distribute/strategy.h"
#include "distribute/strategy_devices.h"
#include "distribute/variables.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/builtin_topologies.h"
#include "simulator/sim_platform.h"

namespace {

using ::devices::Shape;
using ::devices::Tensor;
using ::distribute::ps::InProcessParameterServers;
using ::distribute::ps::ParameterServerStrategy;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Run {
  std::vector<float> w;
  int64_t steps = 0;
  std::vector<int> worker_of_call;
  std::vector<int64_t> ps_bytes_received;
  simulator::SimTime end;
  std::string trace;
};

struct Model {
  std::shared_ptr<distribute::Variable> w;
  std::shared_ptr<distribute::Variable> steps;
};

absl::StatusOr<Model> MakeModel(distribute::Strategy& strategy) {
  ASSIGN_OR_RETURN(auto scope, strategy.Scope());
  Model m;
  distribute::VariableOptions w;
  w.name = "w";
  ASSIGN_OR_RETURN(auto made, strategy.CreateVariable(
                                  *Tensor::FromVector<float>(
                                      std::vector<float>(64 * 1024, 0.0f),
                                      Shape({64, 1024})),
                                  w));
  m.w = made;
  distribute::VariableOptions steps;
  steps.name = "steps";
  ASSIGN_OR_RETURN(
      made, strategy.CreateVariable(*Tensor::FromVector<int64_t>({0}, Shape()),
                                    steps));
  m.steps = made;
  return m;
}

// A simulated cluster of `hosts` DGX H100 hosts whose last `ps` hosts'
// CPUs are the ps tasks.
struct SimCluster {
  std::unique_ptr<simulator::SimPlatform> platform;
  std::vector<distribute::TaskDeviceGroup> tasks;
  std::shared_ptr<InProcessParameterServers> servers;
};

absl::StatusOr<SimCluster> StartSimCluster(int hosts, int ps) {
  ASSIGN_OR_RETURN(auto topology, simulator::BuiltinTopology(absl::StrCat(
                                      "dgx_h100_cluster:", hosts)));
  SimCluster c;
  ASSIGN_OR_RETURN(auto platform,
                   simulator::SimPlatform::Create(std::move(topology)));
  c.platform = std::move(platform);
  ASSIGN_OR_RETURN(auto tasks, distribute::DevicesByTask(*c.platform));
  c.tasks = std::move(tasks);
  std::vector<std::string> ps_devices;
  for (int p = hosts - ps; p < hosts; ++p) {
    ps_devices.push_back(c.tasks[static_cast<size_t>(p)].cpus[0]);
  }
  ASSIGN_OR_RETURN(auto servers,
                   InProcessParameterServers::Create(*c.platform, ps_devices));
  c.servers = std::move(servers);
  return c;
}

// Options of a strategy whose replica is `device`, variables split in two.
distribute::ps::ParameterServerStrategyOptions TwoShardsOn(
    const std::string& device) {
  distribute::ps::ParameterServerStrategyOptions options;
  options.variable_partitioner =
      std::make_shared<distribute::FixedShardsPartitioner>(
          *distribute::FixedShardsPartitioner::Create(2));
  options.devices = {device};
  return options;
}

// kCalls steps on the simulated cluster; each subtracts 0.5 from w on the
// worker's first GPU and counts itself through extended().Update.
constexpr int kCalls = 12;

absl::StatusOr<Run> TrainOnce() {
  ASSIGN_OR_RETURN(auto c, StartSimCluster(4, 2));
  const std::vector<distribute::TaskDeviceGroup>& tasks = c.tasks;
  ASSIGN_OR_RETURN(auto coordinator,
                   ParameterServerStrategy::CreateInProcess(
                       c.servers, true, TwoShardsOn(tasks[0].cpus[0])));
  ASSIGN_OR_RETURN(auto made, MakeModel(*coordinator));

  std::vector<std::unique_ptr<ParameterServerStrategy>> workers;
  std::vector<Model> models;
  std::vector<devices::Device*> hosts;
  for (int w = 0; w < 2; ++w) {
    const distribute::TaskDeviceGroup& host_devices =
        tasks[static_cast<size_t>(w)];
    ASSIGN_OR_RETURN(auto strategy,
                     ParameterServerStrategy::CreateInProcess(
                         c.servers, false, TwoShardsOn(host_devices.gpus[0])));
    ASSIGN_OR_RETURN(auto model, MakeModel(*strategy));
    models.push_back(model);
    workers.push_back(std::move(strategy));
    ASSIGN_OR_RETURN(auto host, c.platform->FindDevice(host_devices.cpus[0]));
    hosts.push_back(host);
  }
  Run run;
  run.worker_of_call.assign(kCalls, -1);
  const Tensor half = *Tensor::FromVector<float>(
      std::vector<float>(64 * 1024, 0.5f), Shape({64, 1024}));
  RETURN_IF_ERROR(distribute::ps::RunOnWorkers(
      hosts, kCalls, [&](int w, int64_t call) -> absl::Status {
        run.worker_of_call[static_cast<size_t>(call)] = w;
        const Model& m = models[static_cast<size_t>(w)];
        distribute::Strategy& strategy = *workers[static_cast<size_t>(w)];
        return strategy
            .Run(
                [&](distribute::ReplicaContext& ctx,
                    const std::vector<Tensor>& args)
                    -> absl::StatusOr<std::vector<Tensor>> {
                  ASSIGN_OR_RETURN(auto value, m.w->Read());
                  absl::Status st = m.w->AssignSub(args[0]);
                  RETURN_IF_ERROR(st);
                  st = ctx.strategy().extended().Update(
                      *m.steps, [](Tensor& t, const std::vector<Tensor>&) {
                        ++t.data<int64_t>()[0];
                        return absl::OkStatus();
                      });
                  RETURN_IF_ERROR(st);
                  return std::vector<Tensor>{};
                },
                {half})
            .status();
      }));
  ASSIGN_OR_RETURN(auto w, made.w->Read());
  run.w = w.ToVector<float>();
  ASSIGN_OR_RETURN(auto steps, made.steps->Read());
  run.steps = steps.data<int64_t>()[0];
  for (int p = 2; p < 4; ++p) {
    ASSIGN_OR_RETURN(auto stats, c.platform->DeviceStats(
                                     tasks[static_cast<size_t>(p)].cpus[0]));
    run.ps_bytes_received.push_back(stats.bytes_received);
  }
  run.end = c.platform->now();
  run.trace = c.platform->TraceJson();
  return run;
}

TEST(SimulatedPsTest, StepsRunOnFreeWorkersAndEveryUpdateCounts) {
  auto run = TrainOnce();
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->w, std::vector<float>(64 * 1024, -0.5f * kCalls));
  EXPECT_EQ(run->steps, kCalls);
  // Both workers took calls.
  int on_first = 0;
  for (int w : run->worker_of_call) {
    ASSERT_GE(w, 0);
    on_first += w == 0 ? 1 : 0;
  }
  EXPECT_GT(on_first, 0);
  EXPECT_LT(on_first, kCalls);
  // Reading and updating 256 KiB across the network took simulated time,
  // and every update's half of w crossed to each ps host.
  EXPECT_GT(run->end, simulator::SimTime());
  for (int64_t bytes : run->ps_bytes_received) {
    EXPECT_GE(bytes, int64_t{kCalls} * 32 * 1024 * 4);
  }
  EXPECT_THAT(run->trace, HasSubstr("\"ph\""));
}

TEST(SimulatedPsTest, TheSameRunTwice) {
  auto first = TrainOnce();
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = TrainOnce();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->worker_of_call, second->worker_of_call);
  EXPECT_EQ(first->end, second->end);
  EXPECT_EQ(first->trace, second->trace);
}

// A row look-up moves the rows named, not the table: two rows of 4 KiB
// reach the reading GPU, one from each ps host.
TEST(SimulatedPsTest, RowLookupsMoveOnlyTheRows) {
  auto c = StartSimCluster(3, 2);
  ASSERT_TRUE(c.ok()) << c.status();
  const std::vector<distribute::TaskDeviceGroup>& tasks = c->tasks;
  auto coordinator = ParameterServerStrategy::CreateInProcess(
      c->servers, true, TwoShardsOn(tasks[0].cpus[0]));
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  std::vector<float> init(64 * 1024);
  for (size_t i = 0; i < init.size(); ++i) init[i] = static_cast<float>(i);
  distribute::VariableOptions table_options;
  table_options.name = "table";
  std::shared_ptr<distribute::Variable> made;
  {
    auto scope = (*coordinator)->Scope();
    ASSERT_TRUE(scope.ok());
    auto v = (*coordinator)
                 ->CreateVariable(
                     *Tensor::FromVector<float>(init, Shape({64, 1024})),
                     table_options);
    ASSERT_TRUE(v.ok()) << v.status();
    made = *v;
  }
  auto worker = ParameterServerStrategy::CreateInProcess(
      c->servers, false, TwoShardsOn(tasks[0].gpus[0]));
  ASSERT_TRUE(worker.ok()) << worker.status();
  std::shared_ptr<distribute::Variable> table;
  {
    auto scope = (*worker)->Scope();
    ASSERT_TRUE(scope.ok());
    auto v = (*worker)->CreateVariable(
        *Tensor::FromVector<float>(init, Shape({64, 1024})), table_options);
    ASSERT_TRUE(v.ok()) << v.status();
    table = *v;
  }
  auto before = c->platform->DeviceStats(tasks[0].gpus[0]);
  ASSERT_TRUE(before.ok());
  auto out = (*worker)->Run(
      [&](distribute::ReplicaContext&,
          const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        ASSIGN_OR_RETURN(
            auto rows, table->SparseRead(Tensor::FromVector<int64_t>({40, 1})));
        return std::vector<Tensor>{rows};
      });
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& rows = (*out)[0].value(0);
  ASSERT_EQ(rows.shape(), Shape({2, 1024}));
  EXPECT_EQ(rows.data<float>()[0], 40.0f * 1024);
  EXPECT_EQ(rows.data<float>()[1024 + 5], 1024.0f + 5);
  auto after = c->platform->DeviceStats(tasks[0].gpus[0]);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->bytes_received - before->bytes_received, 2 * 1024 * 4);
}

TEST(SimulatedPsTest, InProcessStrategiesRefuseWhatNeedsServers) {
  auto c = StartSimCluster(2, 1);
  ASSERT_TRUE(c.ok()) << c.status();
  const std::vector<distribute::TaskDeviceGroup>& tasks = c->tasks;
  const std::shared_ptr<InProcessParameterServers>& servers = c->servers;
  // Devices are required.
  EXPECT_EQ(ParameterServerStrategy::CreateInProcess(servers, true, {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  distribute::ps::ParameterServerStrategyOptions options;
  options.devices = {tasks[0].gpus[0]};
  auto strategy =
      ParameterServerStrategy::CreateInProcess(servers, false, options);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  auto model = MakeModel(**strategy);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT(model->w->devices(), ElementsAre(tasks[1].cpus[0]));
  // Bound, not made: the coordinator has made nothing.
  absl::StatusOr<Tensor> read = model->w->Read();
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(servers->size(), 0);
  EXPECT_EQ((*strategy)
                ->CreateVariable("x", Tensor::FromVector<float>({1}))
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  // Colocation names a ps device.
  {
    auto scope = (*strategy)->Scope();
    ASSERT_TRUE(scope.ok());
    auto guard = (*strategy)->extended().ColocateVarsWith(*model->w);
    ASSERT_TRUE(guard.ok()) << guard.status();
    auto v = (*strategy)->CreateVariable(
        *Tensor::FromVector<float>({1, 2}, Shape({2})));
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_THAT((*v)->devices(), ElementsAre(tasks[1].cpus[0]));
  }
  // A timing-only platform keeps no values for the ps to hold.
  auto timing =
      simulator::SimPlatform::FromSpec("sim:dgx_h100_cluster:2;timing");
  ASSERT_TRUE(timing.ok()) << timing.status();
  auto timing_tasks = distribute::DevicesByTask(**timing);
  ASSERT_TRUE(timing_tasks.ok());
  absl::Status no_values =
      InProcessParameterServers::Create(**timing, {(*timing_tasks)[1].cpus[0]})
          .status();
  EXPECT_EQ(no_values.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(no_values.message(), HasSubstr("timing-only"));
  EXPECT_EQ(distribute::ps::RunOnWorkers({}, 1, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace

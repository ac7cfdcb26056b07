// For tests: a ParameterServerStrategy cluster of real gRPC servers on
// 127.0.0.1 in the test's process, kWorkers workers and kPs ps tasks.
// Failures are reported through gtest (EXPECT) where they happen.
#ifndef DISTRIBUTE_PS_TEST_CLUSTER_H_
#define DISTRIBUTE_PS_TEST_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "devices/shape.h"
#include "devices/tensor.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/ps/parameter_server_strategy.h"
#include "distribute/ps/ps_client.h"
#include "distribute/server/server.h"

namespace distribute {
namespace ps {

inline constexpr int kWorkers = 2;
inline constexpr int kPs = 2;

// Servers for the worker and ps tasks of one cluster; ps tasks serve their
// variables, workers the functions the tests register.
struct Cluster {
  cluster::ClusterSpec spec;
  std::vector<std::unique_ptr<Server>> workers;
  std::vector<std::unique_ptr<Server>> ps;
  std::vector<std::shared_ptr<VariableStore>> stores;
};

// A new (not started) server for ps task `t` of `c`, with an empty
// VariableStore, in c.ps[t] and c.stores[t]. False on a failure.
bool MakePs(Cluster& c, int t);

// The servers of a new cluster on free ports, none started; nullptr on a
// failure.
std::unique_ptr<Cluster> StartCluster();

// Starts every server of `c`.
void StartAll(Cluster& c);

// Registers `fn` as `name` on every worker.
void OnEveryWorker(Cluster& c, const std::string& name, WorkerFunction fn);

// A float32 host tensor.
devices::Tensor Floats(std::vector<float> v, devices::Shape shape);

}  // namespace ps
}  // namespace distribute

#endif  // DISTRIBUTE_PS_TEST_CLUSTER_H_

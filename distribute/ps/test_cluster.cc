#include "distribute/ps/test_cluster.h"

#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "distribute/server/internal/test_cluster.h"
#include "gtest/gtest.h"

namespace distribute {
namespace ps {

bool MakePs(Cluster& c, int t) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Create(c.spec, "ps", t);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return false;
  absl::StatusOr<std::shared_ptr<VariableStore>> store =
      VariableStore::Install((*server)->function_registry());
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return false;
  c.ps[static_cast<size_t>(t)] = *std::move(server);
  c.stores[static_cast<size_t>(t)] = *std::move(store);
  return true;
}

std::unique_ptr<Cluster> StartCluster() {
  absl::StatusOr<std::vector<int>> ports =
      server_internal::PickFreePorts(kWorkers + kPs);
  EXPECT_TRUE(ports.ok()) << ports.status();
  if (!ports.ok()) return nullptr;
  std::vector<std::string> workers, ps;
  for (int i = 0; i < kWorkers + kPs; ++i) {
    (i < kWorkers ? workers : ps)
        .push_back(
            absl::StrCat("127.0.0.1:", (*ports)[static_cast<size_t>(i)]));
  }
  auto cluster = std::make_unique<Cluster>();
  absl::StatusOr<cluster::ClusterSpec> spec =
      cluster::ClusterSpec::Create({{"worker", workers}, {"ps", ps}});
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return nullptr;
  cluster->spec = *spec;
  for (int t = 0; t < kWorkers; ++t) {
    absl::StatusOr<std::unique_ptr<Server>> server =
        Server::Create(cluster->spec, "worker", t);
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return nullptr;
    cluster->workers.push_back(*std::move(server));
  }
  cluster->ps.resize(kPs);
  cluster->stores.resize(kPs);
  for (int t = 0; t < kPs; ++t) {
    if (!MakePs(*cluster, t)) return nullptr;
  }
  return cluster;
}

void StartAll(Cluster& c) {
  for (auto& s : c.workers) ASSERT_TRUE(s->Start().ok());
  for (auto& s : c.ps) ASSERT_TRUE(s->Start().ok());
}

void OnEveryWorker(Cluster& c, const std::string& name, WorkerFunction fn) {
  for (auto& w : c.workers) {
    ASSERT_TRUE(RegisterWorkerFunction(*w, name, fn).ok());
  }
}

devices::Tensor Floats(std::vector<float> v, devices::Shape shape) {
  return *devices::Tensor::FromVector<float>(v, std::move(shape));
}

}  // namespace ps
}  // namespace distribute

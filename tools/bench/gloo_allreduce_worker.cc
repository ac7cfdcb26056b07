// One rank of a cross-process Gloo all-reduce over Gloo's TCP transport on
// 127.0.0.1, for compare_grpc_collectives.sh (the comparison baseline; a
// manual target: it needs Debian's libgloo-dev). Ranks meet through a
// gloo::rendezvous::FileStore in a directory they share.
//
//   gloo_allreduce_worker --rank=0 --size=2 --store=/tmp/gloo-store
//       [--algorithm=ring|ring_chunked] [--min_bytes=4096 --max_bytes=...]
//
// Rank 0 prints the lines of allreduce_sweep.h with impl "gloo_<algorithm>".
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gloo/allreduce_ring.h"
#include "gloo/allreduce_ring_chunked.h"
#include "gloo/barrier_all_to_one.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/transport/tcp/device.h"
#include "tools/bench/allreduce_sweep.h"
#include "tools/flags/flags.h"

int main(int argc, char** argv) {
  int64_t rank = -1, size = 0;
  std::string store_path;
  std::string algorithm = "ring_chunked";
  tools_bench::SweepOptions sweep;
  tools_flags::FlagSet flags("gloo_allreduce_worker");
  flags.Int("rank", &rank, "this process's rank, 0 <= R < --size");
  flags.Int("size", &size, "how many ranks");
  flags.String("store", &store_path,
               "a directory every rank shares (gloo's FileStore)");
  flags.String("algorithm", &algorithm, "ring or ring_chunked");
  flags.Int("min_bytes", &sweep.min_bytes, "smallest all-reduce");
  flags.Int("max_bytes", &sweep.max_bytes, "largest all-reduce (sizes x4)");
  const absl::Status parsed = flags.Parse(argc, argv);
  if (absl::IsCancelled(parsed)) return 0;  // --help
  if (!parsed.ok()) {
    std::fprintf(stderr, "gloo_allreduce_worker: %s\n",
                 std::string(parsed.message()).c_str());
    return 2;
  }
  if (size < 1 || rank < 0 || rank >= size || store_path.empty() ||
      (algorithm != "ring" && algorithm != "ring_chunked")) {
    std::fprintf(stderr,
                 "usage: gloo_allreduce_worker --rank=R --size=N --store=DIR "
                 "[--algorithm=ring|ring_chunked]\n");
    return 2;
  }
  sweep.impl = "gloo_" + algorithm;
  sweep.rank = static_cast<int>(rank);
  sweep.size = static_cast<int>(size);
  // Gloo reports errors by throwing gloo::Exception.
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    std::shared_ptr<gloo::transport::Device> device =
        gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(store_path);
    auto context =
        std::make_shared<gloo::rendezvous::Context>(sweep.rank, sweep.size);
    context->connectFullMesh(store, device);
    std::vector<float> data;
    std::unique_ptr<gloo::Algorithm> all_reduce;
    const bool ok = tools_bench::RunSweep(
        sweep,
        [&](int64_t bytes) {
          data.assign(static_cast<size_t>(bytes / 4),
                      static_cast<float>(sweep.rank));
          std::vector<float*> pointers{data.data()};
          const int count = static_cast<int>(data.size());
          if (algorithm == "ring") {
            all_reduce = std::make_unique<gloo::AllreduceRing<float>>(
                context, pointers, count);
          } else {
            all_reduce = std::make_unique<gloo::AllreduceRingChunked<float>>(
                context, pointers, count);
          }
          return true;
        },
        [&] {
          all_reduce->run();
          return true;
        },
        [&] {
          gloo::BarrierAllToOne barrier(context);
          barrier.run();
          return true;
        });
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_allreduce_worker: %s\n", e.what());
    return 1;
  }
}

// The symmetry of a schedule on a network; see symmetric_replay.h.
#include "tools/distsim/symmetric_replay.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"

namespace distsim {
namespace {

namespace dc = distribute::collective;

constexpr uint32_t kNone = ~uint32_t{0};

uint64_t Mix(uint64_t h, uint64_t v) {
  uint64_t x = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

bool IsMessage(const dc::Step& step) {
  return step.kind == dc::StepKind::kSend || step.kind == dc::StepKind::kRecv;
}

// Elements a message step moves (0 for other steps).
int64_t MessageCount(const dc::Step& step) {
  if (step.kind == dc::StepKind::kSend) return step.src.count;
  if (step.kind == dc::StepKind::kRecv) return step.dst.count;
  return 0;
}

class Finder {
 public:
  Finder(const dc::Schedule& schedule, const std::vector<int>& devices,
         const simulator::Topology& topology, RouteFunction route)
      : schedule_(schedule),
        devices_(devices),
        topology_(topology),
        route_(route),
        n_(static_cast<int>(devices.size())) {}

  std::optional<SymmetryPlan> Find() {
    if (!Match()) return std::nullopt;
    class_.assign(static_cast<size_t>(n_), 0);
    size_t classes = 1;
    // Ranks whose flows cross differently built routes (a ring's step
    // between leaf switches among steps under one) are told apart, which
    // tells their peers apart in turn, until the classes hold.
    while (true) {
      Refine();
      // Past half the ranks, one rank a class saves too little to pay for
      // the checks (trees, ECMP-hashed fabrics): replay every rank.
      if (2 * reps_.size() > static_cast<size_t>(n_)) return std::nullopt;
      if (!PairClasses()) return std::nullopt;
      ClassifyLinks();
      const bool consistent = SplitByRoutes();
      if (consistent) break;
      if (reps_.size() == classes) return std::nullopt;  // no progress
      classes = reps_.size();
    }
    if (!Verify()) return std::nullopt;
    return Build();
  }

  const std::vector<dc::Step>& Steps(int rank) const {
    return schedule_.ranks[static_cast<size_t>(rank)].steps;
  }

  // match_[offset(r) + i]: the index of the step of r's peer that matches
  // r's message step i.
  bool Match() {
    size_t total = 0;
    for (int r = 0; r < n_; ++r) {
      offsets_.push_back(total);
      total += Steps(r).size();
    }
    match_.assign(total, kNone);
    struct Key {
      int32_t src;
      int64_t tag;
      uint32_t index;
    };
    std::vector<Key> keys;
    std::vector<size_t> begin(static_cast<size_t>(n_) + 1, 0);
    for (int r = 0; r < n_; ++r) {
      begin[static_cast<size_t>(r)] = keys.size();
      const std::vector<dc::Step>& steps = Steps(r);
      for (size_t i = 0; i < steps.size(); ++i) {
        const dc::Step& step = steps[i];
        if (IsMessage(step) && (step.peer < 0 || step.peer >= n_)) {
          return false;
        }
        if (step.kind != dc::StepKind::kRecv) continue;
        keys.push_back({step.peer, step.tag, static_cast<uint32_t>(i)});
      }
      auto first = keys.begin() +
                   static_cast<std::ptrdiff_t>(begin[static_cast<size_t>(r)]);
      auto less = [](const Key& a, const Key& b) {
        return a.src != b.src ? a.src < b.src : a.tag < b.tag;
      };
      std::sort(first, keys.end(), less);
      for (auto it = first; it != keys.end() && it + 1 != keys.end(); ++it) {
        if (!less(*it, *(it + 1))) return false;  // two alike
      }
    }
    begin[static_cast<size_t>(n_)] = keys.size();
    for (int r = 0; r < n_; ++r) {
      const std::vector<dc::Step>& steps = Steps(r);
      for (size_t i = 0; i < steps.size(); ++i) {
        const dc::Step& step = steps[i];
        if (step.kind != dc::StepKind::kSend) continue;
        const size_t p = static_cast<size_t>(step.peer);
        auto first = keys.begin() + static_cast<std::ptrdiff_t>(begin[p]);
        auto last = keys.begin() + static_cast<std::ptrdiff_t>(begin[p + 1]);
        auto it = std::lower_bound(
            first, last, std::make_pair(r, step.tag),
            [](const Key& k, const std::pair<int, int64_t>& v) {
              return k.src != v.first ? k.src < v.first : k.tag < v.second;
            });
        if (it == last || it->src != r || it->tag != step.tag) return false;
        uint32_t& back = match_[offsets_[p] + it->index];
        if (back != kNone) return false;  // two sends for one receive
        back = static_cast<uint32_t>(i);
        match_[offsets_[static_cast<size_t>(r)] + i] = it->index;
      }
    }
    for (int r = 0; r < n_; ++r) {
      const std::vector<dc::Step>& steps = Steps(r);
      for (size_t i = 0; i < steps.size(); ++i) {
        if (IsMessage(steps[i]) &&
            match_[offsets_[static_cast<size_t>(r)] + i] == kNone) {
          return false;
        }
      }
    }
    return true;
  }

  // The coarsest partition of the ranks in which equivalent ranks have the
  // same steps with equivalent peers: split classes by their steps' peer
  // classes until nothing splits.
  void Refine() {
    if (fixed_.empty()) Fingerprint();
    int classes = 0;
    for (const int c : class_) classes = std::max(classes, c + 1);
    while (true) {
      absl::flat_hash_map<uint64_t, int> ids;
      std::vector<int> next(static_cast<size_t>(n_));
      for (int r = 0; r < n_; ++r) {
        uint64_t h = Mix(fixed_[static_cast<size_t>(r)],
                         static_cast<uint64_t>(class_[static_cast<size_t>(r)]));
        for (const dc::Step& step : Steps(r)) {
          if (!IsMessage(step)) continue;
          h = Mix(
              h, static_cast<uint64_t>(class_[static_cast<size_t>(step.peer)]));
        }
        next[static_cast<size_t>(r)] =
            ids.emplace(h, static_cast<int>(ids.size())).first->second;
      }
      const int found = static_cast<int>(ids.size());
      class_ = std::move(next);
      if (found == classes) break;
      classes = found;
    }
    SetRepresentatives();
  }

  // Each rank's steps apart from its peers' classes, hashed.
  void Fingerprint() {
    fixed_.resize(static_cast<size_t>(n_));
    for (int r = 0; r < n_; ++r) {
      const std::vector<dc::Step>& steps = Steps(r);
      uint64_t h = Mix(0, steps.size());
      for (size_t i = 0; i < steps.size(); ++i) {
        const dc::Step& step = steps[i];
        h = Mix(h, static_cast<uint64_t>(step.kind));
        h = Mix(h, static_cast<uint64_t>(MessageCount(step)));
        h = Mix(h, step.deps.size());
        for (const int32_t d : step.deps) h = Mix(h, static_cast<uint64_t>(d));
        if (IsMessage(step)) {
          h = Mix(h, match_[offsets_[static_cast<size_t>(r)] + i]);
        }
      }
      fixed_[static_cast<size_t>(r)] = h;
    }
  }

  // The representative (lowest device) and members of each class.
  void SetRepresentatives() {
    int classes = 0;
    for (const int c : class_) classes = std::max(classes, c + 1);
    reps_.assign(static_cast<size_t>(classes), -1);
    members_.assign(static_cast<size_t>(classes), {});
    for (int r = 0; r < n_; ++r) {
      const size_t c = static_cast<size_t>(class_[static_cast<size_t>(r)]);
      members_[c].push_back(r);
      int& rep = reps_[c];
      if (rep < 0 || devices_[static_cast<size_t>(r)] <
                         devices_[static_cast<size_t>(rep)]) {
        rep = r;
      }
    }
  }

  // Checks, step by step, that each rank is its representative's image
  // (hashes only grouped them).
  bool Verify() const {
    for (int r = 0; r < n_; ++r) {
      const int rep =
          reps_[static_cast<size_t>(class_[static_cast<size_t>(r)])];
      if (rep == r) continue;
      const std::vector<dc::Step>& a = Steps(r);
      const std::vector<dc::Step>& b = Steps(rep);
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].kind != b[i].kind ||
            MessageCount(a[i]) != MessageCount(b[i]) ||
            a[i].deps != b[i].deps) {
          return false;
        }
        if (!IsMessage(a[i])) continue;
        if (class_[static_cast<size_t>(a[i].peer)] !=
                class_[static_cast<size_t>(b[i].peer)] ||
            match_[offsets_[static_cast<size_t>(r)] + i] !=
                match_[offsets_[static_cast<size_t>(rep)] + i]) {
          return false;
        }
      }
    }
    return true;
  }

  // Groups the classes' send steps by the device pairs their members send
  // between; routes each pair once and counts each pair class's flows on
  // every link. False when a route fails.
  bool PairClasses() {
    const size_t classes = reps_.size();
    pairs_.clear();
    flow_of_.assign(classes, {});
    absl::flat_hash_map<uint64_t, std::vector<int>> by_hash;
    for (size_t c = 0; c < classes; ++c) {
      const std::vector<dc::Step>& steps = Steps(reps_[c]);
      flow_of_[c].assign(steps.size(), -1);
      for (size_t i = 0; i < steps.size(); ++i) {
        if (steps[i].kind != dc::StepKind::kSend) continue;
        uint64_t h = Mix(c, 0);
        for (const int r : members_[c]) {
          h = Mix(h, static_cast<uint64_t>(Steps(r)[i].peer));
        }
        std::vector<int>& candidates = by_hash[h];
        int found = -1;
        for (const int p : candidates) {
          const Pair& pair = pairs_[static_cast<size_t>(p)];
          if (pair.cls != c) continue;
          bool same = true;
          for (const int r : members_[c]) {
            if (Steps(r)[i].peer != Steps(r)[pair.step].peer) {
              same = false;
              break;
            }
          }
          if (same) {
            found = p;
            break;
          }
        }
        if (found < 0) {
          found = static_cast<int>(pairs_.size());
          pairs_.push_back({c, i, {}});
          candidates.push_back(found);
        }
        flow_of_[c][i] = found;
      }
    }
    const size_t num_links = topology_.links().size();
    per_link_.assign(num_links, {});
    std::vector<int64_t> count(num_links, 0);
    std::vector<int> touched;
    for (size_t p = 0; p < pairs_.size(); ++p) {
      Pair& pair = pairs_[p];
      for (const int r : members_[pair.cls]) {
        const int src = devices_[static_cast<size_t>(r)];
        const int dst = devices_[static_cast<size_t>(Steps(r)[pair.step].peer)];
        const uint64_t key =
            (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) |
            static_cast<uint32_t>(dst);
        auto it = routes_.find(key);
        if (it == routes_.end()) {
          absl::StatusOr<std::vector<int>> found = route_(src, dst);
          if (!found.ok()) return false;
          for (const int l : *found) {
            if (l < 0 || static_cast<size_t>(l) >= num_links) return false;
          }
          it = routes_.emplace(key, *std::move(found)).first;
        }
        pair.member_routes.push_back(&it->second);
        for (const int l : it->second) {
          if (count[static_cast<size_t>(l)]++ == 0) touched.push_back(l);
        }
      }
      std::sort(touched.begin(), touched.end());
      for (const int l : touched) {
        per_link_[static_cast<size_t>(l)].push_back(
            {static_cast<int>(p), count[static_cast<size_t>(l)]});
        count[static_cast<size_t>(l)] = 0;
      }
      touched.clear();
    }
    return true;
  }

  // Classes of links with the same capacity that every pair class crosses
  // the same number of times.
  void ClassifyLinks() {
    const std::vector<simulator::Link>& links = topology_.links();
    link_class_.assign(links.size(), -1);
    class_links_.clear();
    absl::flat_hash_map<uint64_t, std::vector<int>> by_hash;
    for (size_t l = 0; l < links.size(); ++l) {
      const std::vector<Use>& uses = per_link_[l];
      if (uses.empty()) continue;
      uint64_t bits;
      std::memcpy(&bits, &links[l].capacity_bytes_per_second, sizeof(bits));
      uint64_t h = Mix(bits, uses.size());
      for (const Use& u : uses) {
        h = Mix(Mix(h, static_cast<uint64_t>(u.pair)),
                static_cast<uint64_t>(u.count));
      }
      std::vector<int>& candidates = by_hash[h];
      int found = -1;
      for (const int k : candidates) {
        const size_t first = static_cast<size_t>(class_links_[k].front());
        if (links[first].capacity_bytes_per_second ==
                links[l].capacity_bytes_per_second &&
            SameUses(per_link_[first], uses)) {
          found = k;
          break;
        }
      }
      if (found < 0) {
        found = static_cast<int>(class_links_.size());
        class_links_.push_back({});
        candidates.push_back(found);
      }
      class_links_[static_cast<size_t>(found)].push_back(static_cast<int>(l));
      link_class_[l] = found;
    }
  }

  // True when every member of each pair class crosses the same link classes
  // with the same latency. Otherwise splits each rank class by the routes
  // its members' flows take, and returns false.
  bool SplitByRoutes() {
    const std::vector<simulator::Link>& links = topology_.links();
    latency_.assign(pairs_.size(), 0);
    std::vector<uint64_t> split(static_cast<size_t>(n_), 0);
    bool consistent = true;
    std::vector<int> seen;
    for (size_t p = 0; p < pairs_.size(); ++p) {
      const Pair& pair = pairs_[p];
      const std::vector<int>& members = members_[pair.cls];
      for (size_t m = 0; m < members.size(); ++m) {
        seen.clear();
        simulator::SimTime latency = 0;
        for (const int l : *pair.member_routes[m]) {
          seen.push_back(link_class_[static_cast<size_t>(l)]);
          latency += links[static_cast<size_t>(l)].latency_ps;
        }
        std::sort(seen.begin(), seen.end());
        uint64_t h = Mix(static_cast<uint64_t>(latency), seen.size());
        for (const int k : seen) h = Mix(h, static_cast<uint64_t>(k));
        if (m == 0) {
          expected_ = seen;
          latency_[p] = latency;
        } else if (seen != expected_ || latency != latency_[p]) {
          consistent = false;
        }
        uint64_t& s = split[static_cast<size_t>(members[m])];
        s = Mix(s, h);
      }
    }
    if (consistent) return true;
    absl::flat_hash_map<std::pair<int, uint64_t>, int> ids;
    for (int r = 0; r < n_; ++r) {
      class_[static_cast<size_t>(r)] =
          ids.emplace(std::make_pair(class_[static_cast<size_t>(r)],
                                     split[static_cast<size_t>(r)]),
                      static_cast<int>(ids.size()))
              .first->second;
    }
    SetRepresentatives();
    return false;
  }

  SymmetryPlan Build() const {
    SymmetryPlan plan;
    plan.rank_class = class_;
    plan.representatives = reps_;
    plan.flow_of = flow_of_;
    for (const std::vector<int>& members : class_links_) {
      plan.links.push_back(
          {topology_.links()[static_cast<size_t>(members.front())]
               .capacity_bytes_per_second,
           static_cast<int64_t>(members.size())});
    }
    for (size_t p = 0; p < pairs_.size(); ++p) {
      const Pair& pair = pairs_[p];
      // The representative's own route (members are in rank order).
      const std::vector<int>& members = members_[pair.cls];
      const size_t m = static_cast<size_t>(
          std::find(members.begin(), members.end(), reps_[pair.cls]) -
          members.begin());
      QuotientFlow flow;
      flow.latency = latency_[p];
      for (const int l : *pair.member_routes[m]) {
        const int k = link_class_[static_cast<size_t>(l)];
        if (std::find(flow.links.begin(), flow.links.end(), k) !=
            flow.links.end()) {
          continue;
        }
        flow.links.push_back(k);
        for (const Use& u : per_link_[static_cast<size_t>(l)]) {
          if (u.pair == static_cast<int>(p))
            flow.multiplicity.push_back(u.count);
        }
      }
      plan.flows.push_back(std::move(flow));
    }
    plan.quotient.op = schedule_.op;
    plan.quotient.algorithm = schedule_.algorithm;
    plan.quotient.options = schedule_.options;
    plan.quotient.options.group_size = static_cast<int32_t>(reps_.size());
    for (size_t c = 0; c < reps_.size(); ++c) {
      const int rep = reps_[c];
      dc::RankProgram program = schedule_.ranks[static_cast<size_t>(rep)];
      for (size_t i = 0; i < program.steps.size(); ++i) {
        dc::Step& step = program.steps[i];
        if (!IsMessage(step)) continue;
        const uint32_t matched = match_[offsets_[static_cast<size_t>(rep)] + i];
        step.tag = step.kind == dc::StepKind::kSend
                       ? static_cast<int64_t>(i)
                       : static_cast<int64_t>(matched);
        step.peer = class_[static_cast<size_t>(step.peer)];
      }
      plan.quotient.ranks.push_back(std::move(program));
    }
    return plan;
  }

  struct Use {
    int pair;
    int64_t count;  // the pair class's flows on the link
  };
  static bool SameUses(const std::vector<Use>& a, const std::vector<Use>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].pair != b[i].pair || a[i].count != b[i].count) return false;
    }
    return true;
  }
  struct Pair {
    size_t cls;   // the sending class
    size_t step;  // a send step of its representative that moves over it
    // By members_[cls] order, into routes_.
    std::vector<const std::vector<int>*> member_routes;
  };

  const dc::Schedule& schedule_;
  const std::vector<int>& devices_;
  const simulator::Topology& topology_;
  RouteFunction route_;
  const int n_;
  std::vector<size_t> offsets_;
  std::vector<uint32_t> match_;
  std::vector<int> class_;
  std::vector<int> reps_;
  std::vector<std::vector<int>> members_;
  std::vector<std::vector<int32_t>> flow_of_;
  std::vector<Pair> pairs_;
  std::vector<std::vector<Use>> per_link_;
  std::vector<int> link_class_;
  std::vector<std::vector<int>> class_links_;
  std::vector<simulator::SimTime> latency_;  // by pair class
  std::vector<int> expected_;
  std::vector<uint64_t> fixed_;  // Fingerprint()
  // By (source device << 32 | destination device); stable addresses.
  absl::node_hash_map<uint64_t, std::vector<int>> routes_;
};

}  // namespace

std::optional<SymmetryPlan> FindSymmetry(const dc::Schedule& schedule,
                                         const std::vector<int>& devices,
                                         const simulator::Topology& topology,
                                         RouteFunction route) {
  if (static_cast<int>(devices.size()) != schedule.group_size()) {
    return std::nullopt;
  }
  return Finder(schedule, devices, topology, route).Find();
}

}  // namespace distsim

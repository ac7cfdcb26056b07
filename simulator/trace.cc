// Chrome trace export and run summary; see trace.h.
#include "simulator/trace.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "simulator/time.h"

namespace simulator {
namespace {

// `text` as a JSON string (nlohmann's escaping; bytes that are not UTF-8
// become U+FFFD, so the trace is always valid JSON).
void AppendJsonString(absl::string_view text, std::string* out) {
  out->append(nlohmann::json(std::string(text))
                  .dump(-1, ' ', /*ensure_ascii=*/false,
                        nlohmann::json::error_handler_t::replace));
}

std::string RenderArgs(const std::vector<TraceArg>& args) {
  std::string out = "{";
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendJsonString(args[i].key, &out);
    out.push_back(':');
    if (const int64_t* number = std::get_if<int64_t>(&args[i].value)) {
      absl::StrAppend(&out, *number);
    } else {
      AppendJsonString(std::get<std::string>(args[i].value), &out);
    }
  }
  out.push_back('}');
  return out;
}

// Floor division to whole nanoseconds.
int64_t FloorNanoseconds(SimTime t) {
  int64_t ns = t / 1000;
  if (t % 1000 < 0) --ns;
  return ns;
}

std::string FormatNanosAsMicros(int64_t ns) {
  const bool negative = ns < 0;
  const uint64_t magnitude = negative ? uint64_t{0} - static_cast<uint64_t>(ns)
                                      : static_cast<uint64_t>(ns);
  return absl::StrFormat("%s%u.%03u", negative ? "-" : "", magnitude / 1000,
                         magnitude % 1000);
}

}  // namespace

std::string FormatTraceMicros(SimTime t) {
  return FormatNanosAsMicros(FloorNanoseconds(t));
}

bool NaturalLess(absl::string_view a, absl::string_view b) {
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (da && db) {
      size_t ei = i;
      size_t ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei])))
        ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej])))
        ++ej;
      // Compare numeric values: strip leading zeros, then length, then digits.
      size_t si = i;
      size_t sj = j;
      while (si + 1 < ei && a[si] == '0') ++si;
      while (sj + 1 < ej && b[sj] == '0') ++sj;
      const absl::string_view na = a.substr(si, ei - si);
      const absl::string_view nb = b.substr(sj, ej - sj);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) {
      return static_cast<unsigned char>(a[i]) <
             static_cast<unsigned char>(b[j]);
    }
    ++i;
    ++j;
  }
  if ((i < a.size()) != (j < b.size())) return j < b.size();
  return a < b;
}

Trace::TrackId Trace::Track(absl::string_view process,
                            absl::string_view thread) {
  absl::MutexLock lock(&mu_);
  auto key = std::make_pair(std::string(process), std::string(thread));
  auto [it, inserted] =
      track_ids_.try_emplace(key, static_cast<TrackId>(tracks_.size()));
  if (inserted) tracks_.push_back(std::move(key));
  return it->second;
}

absl::Status Trace::AddComplete(TrackId track, absl::string_view name,
                                absl::string_view category, SimTime start,
                                SimTime end, std::vector<TraceArg> args) {
  absl::MutexLock lock(&mu_);
  if (track < 0 || static_cast<size_t>(track) >= tracks_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "trace event '", name, "' names track ", track,
        " which this trace never issued; get tracks from Trace::Track"));
  }
  if (start < 0 || end < start) {
    return absl::InvalidArgumentError(
        absl::StrCat("trace event '", name, "' runs from ", FormatTime(start),
                     " to ", FormatTime(end),
                     "; it must start at or after 0 and end no earlier "
                     "than it starts"));
  }
  events_.push_back(Event{track, start, end, std::string(name),
                          std::string(category), std::move(args)});
  return absl::OkStatus();
}

int64_t Trace::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(events_.size());
}

std::string Trace::ToJson() const {
  absl::MutexLock lock(&mu_);
  // Number processes, then threads within each, in natural name order.
  using Names = std::pair<std::string, std::string>;
  std::vector<const Names*> sorted;
  for (const Names& names : tracks_) sorted.push_back(&names);
  std::sort(sorted.begin(), sorted.end(), [](const Names* a, const Names* b) {
    if (a->first != b->first) return NaturalLess(a->first, b->first);
    return NaturalLess(a->second, b->second);
  });
  std::vector<TrackId> order;
  for (const Names* names : sorted) {
    order.push_back(static_cast<TrackId>(names - tracks_.data()));
  }
  std::vector<int64_t> pid(tracks_.size());
  std::vector<int64_t> tid(tracks_.size());
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto begin_line = [&] {
    if (!first) out.append(",\n");
    first = false;
  };
  int64_t current_pid = 0;
  int64_t current_tid = 0;
  const std::string* current_process = nullptr;
  for (const TrackId track : order) {
    const auto& [process, thread] = tracks_[static_cast<size_t>(track)];
    if (current_process == nullptr || *current_process != process) {
      current_process = &process;
      ++current_pid;
      current_tid = 0;
      begin_line();
      absl::StrAppend(&out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":",
                      current_pid, ",\"tid\":0,\"args\":{\"name\":");
      AppendJsonString(process, &out);
      out.append("}}");
      begin_line();
      absl::StrAppend(
          &out,
          "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":", current_pid,
          ",\"tid\":0,\"args\":{\"sort_index\":", current_pid, "}}");
    }
    ++current_tid;
    pid[static_cast<size_t>(track)] = current_pid;
    tid[static_cast<size_t>(track)] = current_tid;
    begin_line();
    absl::StrAppend(
        &out, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":", current_pid,
        ",\"tid\":", current_tid, ",\"args\":{\"name\":");
    AppendJsonString(thread, &out);
    out.append("}}");
    begin_line();
    absl::StrAppend(&out,
                    "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":",
                    current_pid, ",\"tid\":", current_tid,
                    ",\"args\":{\"sort_index\":", current_tid, "}}");
  }
  // Events in a canonical order, independent of recording order.
  struct Rendered {
    int64_t pid;
    int64_t tid;
    SimTime start;
    SimTime end;
    const Event* event;
    std::string args;
  };
  std::vector<Rendered> rendered;
  rendered.reserve(events_.size());
  for (const Event& e : events_) {
    rendered.push_back(Rendered{pid[static_cast<size_t>(e.track)],
                                tid[static_cast<size_t>(e.track)], e.start,
                                e.end, &e, RenderArgs(e.args)});
  }
  std::sort(rendered.begin(), rendered.end(),
            [](const Rendered& a, const Rendered& b) {
              if (a.pid != b.pid) return a.pid < b.pid;
              if (a.tid != b.tid) return a.tid < b.tid;
              if (a.start != b.start) return a.start < b.start;
              if (a.end != b.end) return a.end < b.end;
              if (a.event->name != b.event->name) {
                return a.event->name < b.event->name;
              }
              if (a.event->category != b.event->category) {
                return a.event->category < b.event->category;
              }
              return a.args < b.args;
            });
  for (const Rendered& r : rendered) {
    begin_line();
    out.append("{\"name\":");
    AppendJsonString(r.event->name, &out);
    out.append(",\"cat\":");
    AppendJsonString(r.event->category, &out);
    const int64_t start_ns = FloorNanoseconds(r.start);
    const int64_t end_ns = FloorNanoseconds(r.end);
    absl::StrAppend(
        &out, ",\"ph\":\"X\",\"ts\":", FormatNanosAsMicros(start_ns),
        ",\"dur\":", FormatNanosAsMicros(end_ns - start_ns), ",\"pid\":", r.pid,
        ",\"tid\":", r.tid, ",\"args\":", r.args, "}");
  }
  out.append("\n]}\n");
  return out;
}

absl::Status Trace::WriteJson(const std::string& path) const {
  const std::string json = ToJson();
  errno = 0;
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (file) file.write(json.data(), static_cast<std::streamsize>(json.size()));
  if (file) file.close();
  if (file) return absl::OkStatus();
  const int error = errno;
  const std::string message =
      absl::StrCat("cannot write the trace to '", path,
                   "': ", error != 0 ? std::strerror(error) : "I/O error",
                   "; pass a path in an existing, writable directory");
  if (error == ENOENT || error == ENOTDIR) return absl::NotFoundError(message);
  if (error == EACCES || error == EPERM || error == EROFS) {
    return absl::PermissionDeniedError(message);
  }
  return absl::UnknownError(message);
}

std::string Summary::ToTable() const {
  std::string out =
      absl::StrCat("simulated time: ", FormatTime(end_time), "\n");
  size_t width = 6;
  for (const DeviceUsage& d : devices) width = std::max(width, d.name.size());
  if (!devices.empty()) {
    absl::StrAppendFormat(&out, "%-*s %10s %16s %16s %7s\n", width, "device",
                          "kernels", "busy", "idle", "busy%");
    for (const DeviceUsage& d : devices) {
      const double busy_share = end_time > 0
                                    ? 100.0 * static_cast<double>(d.busy) /
                                          static_cast<double>(end_time)
                                    : 0.0;
      absl::StrAppendFormat(&out, "%-*s %10d %16s %16s %7.2f\n", width, d.name,
                            d.kernels, FormatTime(d.busy), FormatTime(d.idle),
                            busy_share);
    }
  }
  width = 4;
  bool any_link = false;
  for (const LinkUsage& l : links) {
    if (l.bytes == 0) continue;
    any_link = true;
    width = std::max(width, l.name.size());
  }
  if (any_link) {
    absl::StrAppendFormat(&out, "%-*s %8s %16s %16s %7s\n", width, "link",
                          "flows", "bytes", "busy", "util%");
    for (const LinkUsage& l : links) {
      if (l.bytes == 0) continue;
      absl::StrAppendFormat(&out, "%-*s %8d %16d %16s %7.2f\n", width, l.name,
                            l.flows, l.bytes, FormatTime(l.busy),
                            100.0 * l.utilisation);
    }
  }
  return out;
}

}  // namespace simulator

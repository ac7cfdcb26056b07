#include "distribute/cluster/slurm_hostlist.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "devices/status_macros.h"

namespace distribute {
namespace cluster {
namespace {

// Largest bound accepted in a range, so that widths and counts stay small.
constexpr int kMaxBoundDigits = 18;

absl::Status HostlistError(absl::string_view hostlist, size_t position,
                           absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("invalid Slurm hostlist \"%s\" at position %d: %s",
                      hostlist, position, what));
}

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Expands the inside of one bracket group, which starts at `offset` of the
// whole list, to its (padded) numbers.
absl::StatusOr<std::vector<std::string>> ExpandGroup(absl::string_view list,
                                                     absl::string_view group,
                                                     size_t offset) {
  std::vector<std::string> values;
  if (group.empty()) {
    return HostlistError(list, offset - 1, "empty bracket group \"[]\"");
  }
  size_t item_start = 0;
  for (absl::string_view item : absl::StrSplit(group, ',')) {
    const size_t item_offset = offset + item_start;
    item_start += item.size() + 1;
    if (item.empty()) {
      return HostlistError(list, item_offset, "empty item in a bracket group");
    }
    std::vector<absl::string_view> bounds = absl::StrSplit(item, '-');
    if (bounds.size() > 2) {
      return HostlistError(list, item_offset,
                           absl::StrCat("\"", item, "\" is not N or N-M"));
    }
    for (absl::string_view bound : bounds) {
      if (!AllDigits(bound) || bound.size() > kMaxBoundDigits) {
        return HostlistError(
            list, item_offset,
            absl::StrCat("\"", item, "\" is not N or N-M with decimal N, M"));
      }
    }
    if (bounds.size() == 1) {
      values.emplace_back(item);
      continue;
    }
    int64_t low = 0;
    int64_t high = 0;
    if (!absl::SimpleAtoi(bounds[0], &low) ||
        !absl::SimpleAtoi(bounds[1], &high)) {
      return HostlistError(list, item_offset,
                           absl::StrCat("\"", item, "\" has a bad bound"));
    }
    if (low > high) {
      return HostlistError(
          list, item_offset,
          absl::StrCat("range \"", item, "\" is reversed; write it ", high, "-",
                       low));
    }
    if (high - low >= kMaxExpandedHosts ||
        static_cast<int64_t>(values.size()) + (high - low) >=
            kMaxExpandedHosts) {
      return HostlistError(
          list, item_offset,
          absl::StrCat("expands to more than ", kMaxExpandedHosts, " hosts"));
    }
    const int width = static_cast<int>(bounds[0].size());
    for (int64_t v = low; v <= high; ++v) {
      values.push_back(absl::StrFormat("%0*d", width, v));
    }
  }
  return values;
}

// Expands one top-level entry (no top-level commas) that starts at `offset`.
absl::Status ExpandEntry(absl::string_view list, absl::string_view entry,
                         size_t offset, std::vector<std::string>* hosts,
                         int64_t* bytes) {
  if (entry.empty()) {
    return HostlistError(list, offset, "empty host name");
  }
  // Partial host names so far; each group multiplies them.
  std::vector<std::string> partial = {""};
  size_t i = 0;
  while (i < entry.size()) {
    const size_t open = entry.find_first_of("[]", i);
    if (open == absl::string_view::npos) {
      int64_t partial_bytes = 0;
      for (const std::string& p : partial) {
        partial_bytes += static_cast<int64_t>(p.size());
      }
      if (*bytes + partial_bytes +
              static_cast<int64_t>(partial.size()) *
                  static_cast<int64_t>(entry.size() - i) >
          kMaxExpandedBytes) {
        return HostlistError(
            list, offset + i,
            absl::StrCat("expands to more than ", kMaxExpandedBytes,
                         " bytes of host names"));
      }
      for (std::string& p : partial) absl::StrAppend(&p, entry.substr(i));
      break;
    }
    if (entry[open] == ']') {
      return HostlistError(list, offset + open, "\"]\" without \"[\"");
    }
    const absl::string_view literal = entry.substr(i, open - i);
    const size_t close = entry.find_first_of("[]", open + 1);
    if (close == absl::string_view::npos) {
      return HostlistError(list, offset + open, "\"[\" without \"]\"");
    }
    if (entry[close] == '[') {
      return HostlistError(list, offset + close, "nested \"[\"");
    }
    ASSIGN_OR_RETURN(std::vector<std::string> values,
                     ExpandGroup(list, entry.substr(open + 1, close - open - 1),
                                 offset + open + 1));
    // The names' bytes after this group: every partial name, the literal
    // and a value, for every pair.
    int64_t partial_bytes = 0, value_bytes = 0;
    for (const std::string& p : partial) {
      partial_bytes += static_cast<int64_t>(p.size());
    }
    for (const std::string& v : values) {
      value_bytes += static_cast<int64_t>(v.size());
    }
    const int64_t count = static_cast<int64_t>(partial.size());
    const int64_t width = static_cast<int64_t>(values.size());
    // Each factor is bounded (hosts by kMaxExpandedHosts, names by the
    // byte bound checked before), so these products do not overflow.
    if (count * width <= kMaxExpandedHosts &&
        *bytes + partial_bytes * width +
                count * (width * static_cast<int64_t>(literal.size()) +
                         value_bytes) >
            kMaxExpandedBytes) {
      return HostlistError(
          list, offset + open,
          absl::StrCat("expands to more than ", kMaxExpandedBytes,
                       " bytes of host names"));
    }
    if (static_cast<int64_t>(partial.size()) *
                static_cast<int64_t>(values.size()) +
            static_cast<int64_t>(hosts->size()) >
        kMaxExpandedHosts) {
      return HostlistError(
          list, offset + open,
          absl::StrCat("expands to more than ", kMaxExpandedHosts, " hosts"));
    }
    std::vector<std::string> next;
    next.reserve(partial.size() * values.size());
    for (const std::string& p : partial) {
      for (const std::string& v : values) {
        next.push_back(absl::StrCat(p, literal, v));
      }
    }
    partial = std::move(next);
    i = close + 1;
  }
  if (static_cast<int64_t>(hosts->size() + partial.size()) >
      kMaxExpandedHosts) {
    return HostlistError(
        list, offset,
        absl::StrCat("expands to more than ", kMaxExpandedHosts, " hosts"));
  }
  for (std::string& p : partial) {
    *bytes += static_cast<int64_t>(p.size());
    hosts->push_back(std::move(p));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandHostlist(
    absl::string_view hostlist) {
  const absl::string_view list = absl::StripAsciiWhitespace(hostlist);
  if (list.empty()) {
    return absl::InvalidArgumentError(
        "invalid Slurm hostlist: it is empty; expected e.g. \"node[1-4]\"");
  }
  std::vector<std::string> hosts;
  int64_t bytes = 0;  // of the names in `hosts`
  // Split at commas outside brackets; bracket errors are found per entry.
  size_t entry_start = 0;
  bool in_brackets = false;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size()) {
      const char c = list[i];
      if (c == '[') {
        if (in_brackets) return HostlistError(list, i, "nested \"[\"");
        in_brackets = true;
        continue;
      }
      if (c == ']') {
        if (!in_brackets) {
          return HostlistError(list, i, "\"]\" without \"[\"");
        }
        in_brackets = false;
        continue;
      }
      if (c != ',' || in_brackets) continue;
    }
    RETURN_IF_ERROR(ExpandEntry(list, list.substr(entry_start, i - entry_start),
                                entry_start, &hosts, &bytes));
    entry_start = i + 1;
  }
  return hosts;
}

absl::StatusOr<std::vector<int64_t>> ExpandTasksPerNode(
    absl::string_view tasks_per_node) {
  const absl::string_view list = absl::StripAsciiWhitespace(tasks_per_node);
  auto error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid Slurm tasks-per-node list \"", tasks_per_node, "\": ", what,
        "; expected entries like \"2\" or \"2(x3)\", e.g. \"2(x3),1\""));
  };
  if (list.empty()) return error("it is empty");
  std::vector<int64_t> counts;
  for (absl::string_view entry : absl::StrSplit(list, ',')) {
    absl::string_view count_text = entry;
    int64_t repeat = 1;
    const size_t paren = entry.find('(');
    if (paren != absl::string_view::npos) {
      count_text = entry.substr(0, paren);
      absl::string_view rest = entry.substr(paren);
      if (rest.size() < 4 || rest.substr(0, 2) != "(x" || rest.back() != ')' ||
          !AllDigits(rest.substr(2, rest.size() - 3)) ||
          rest.size() - 3 > kMaxBoundDigits ||
          !absl::SimpleAtoi(rest.substr(2, rest.size() - 3), &repeat)) {
        return error(absl::StrCat("entry \"", entry, "\" is malformed"));
      }
      if (repeat == 0) {
        return error(absl::StrCat("entry \"", entry, "\" repeats 0 times"));
      }
    }
    int64_t count = 0;
    if (!AllDigits(count_text) || count_text.size() > kMaxBoundDigits ||
        !absl::SimpleAtoi(count_text, &count)) {
      return error(absl::StrCat("entry \"", entry, "\" is malformed"));
    }
    if (static_cast<int64_t>(counts.size()) + repeat > kMaxExpandedHosts) {
      return error(
          absl::StrCat("it names more than ", kMaxExpandedHosts, " nodes"));
    }
    counts.insert(counts.end(), static_cast<size_t>(repeat), count);
  }
  return counts;
}

}  // namespace cluster
}  // namespace distribute

// FlagSet: the flag parser shared by distsim's subcommands.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "tools/distsim/subcommands.h"

namespace distsim {

std::string UserPath(std::string path) {
  if (path.empty() || path[0] == '/') return path;
  const char* dir = std::getenv("BUILD_WORKING_DIRECTORY");
  if (dir == nullptr || *dir == '\0') return path;
  return absl::StrCat(dir, "/", path);
}

void FlagSet::String(std::string name, std::string* value, std::string help) {
  flags_.push_back(
      {std::move(name), Kind::kString, value, std::move(help), *value});
}

void FlagSet::Int(std::string name, int64_t* value, std::string help) {
  flags_.push_back({std::move(name), Kind::kInt, value, std::move(help),
                    absl::StrCat(*value)});
}

void FlagSet::Double(std::string name, double* value, std::string help) {
  flags_.push_back({std::move(name), Kind::kDouble, value, std::move(help),
                    absl::StrCat(*value)});
}

void FlagSet::Bool(std::string name, bool* value, std::string help) {
  flags_.push_back({std::move(name), Kind::kBool, value, std::move(help),
                    *value ? "true" : "false"});
}

std::string FlagSet::Usage() const {
  std::string out = absl::StrCat("Flags of `distsim ", command_, "`:\n");
  for (const Flag& f : flags_) {
    absl::StrAppend(&out, "  --", f.name, " (default: ",
                    f.default_value.empty() ? "\"\"" : f.default_value,
                    ")\n      ", f.help, "\n");
  }
  return out;
}

absl::Status FlagSet::Set(const Flag& flag, absl::string_view text) {
  switch (flag.kind) {
    case Kind::kString:
      *static_cast<std::string*>(flag.value) = std::string(text);
      return absl::OkStatus();
    case Kind::kInt: {
      int64_t v;
      if (!absl::SimpleAtoi(text, &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag.name, "=", text, " is not an integer"));
      }
      *static_cast<int64_t*>(flag.value) = v;
      return absl::OkStatus();
    }
    case Kind::kDouble: {
      double v;
      if (!absl::SimpleAtod(text, &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag.name, "=", text, " is not a number"));
      }
      *static_cast<double*>(flag.value) = v;
      return absl::OkStatus();
    }
    case Kind::kBool: {
      bool v;
      if (!absl::SimpleAtob(text, &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag.name, "=", text, " is not true or false"));
      }
      *static_cast<bool*>(flag.value) = v;
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown flag kind");
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") {
      std::fputs(Usage().c_str(), stdout);
      return absl::CancelledError("help requested");
    }
    if (!absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg,
                       "': flags are written --name=value\n", Usage()));
    }
    absl::string_view body = absl::string_view(arg).substr(2);
    size_t eq = body.find('=');
    absl::string_view name = body.substr(0, eq);
    const Flag* found = nullptr;
    for (const Flag& f : flags_) {
      if (f.name == name) found = &f;
    }
    if (found == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, "\n", Usage()));
    }
    if (eq == absl::string_view::npos) {
      if (found->kind != Kind::kBool) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " needs a value: --", name, "=..."));
      }
      *static_cast<bool*>(found->value) = true;
      continue;
    }
    RETURN_IF_ERROR(Set(*found, body.substr(eq + 1)));
  }
  return absl::OkStatus();
}

}  // namespace distsim

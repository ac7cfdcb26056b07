#include "tools/flags/flags.h"

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tools_flags {
namespace {

// --help as this project has always printed it: the program, then each flag
// with its default on one line and its help on the next (our help texts are
// sentences, too long for CLI11's one-line columns).
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string /*name*/,
                        CLI::AppFormatMode /*mode*/) const override {
    std::string out;
    if (!app->get_description().empty()) {
      absl::StrAppend(&out, app->get_description(), "\n\n");
    }
    absl::StrAppend(&out, "Flags of `", app->get_name(), "`:\n");
    for (const CLI::Option* opt : app->get_options()) {
      if (opt == app->get_help_ptr()) continue;
      if (opt->get_positional()) {
        absl::StrAppend(&out, "  ", opt->get_name(), "...\n      ",
                        opt->get_description(), "\n");
        continue;
      }
      const std::string& value = opt->get_default_str();
      absl::StrAppend(&out, "  ", opt->get_name(),
                      " (default: ", value.empty() ? "\"\"" : value,
                      ")\n      ", opt->get_description(), "\n");
    }
    absl::StrAppend(&out, "  -h, --help\n      print this list and exit\n");
    return out;
  }
};

// Validators that run on the text before CLI11 converts it: absl's parsers
// refuse what CLI11's would take (an integer out of range, which CLI11
// clamps to the largest; hexadecimal), and say what was expected. (No
// description: CLI11 would append it to the type's name in its messages.)
CLI::Validator IntegerText() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t parsed;
        if (absl::SimpleAtoi(text, &parsed)) return "";
        return absl::StrCat("'", text, "' is not an integer");
      },
      "", "integer");
}

CLI::Validator NumberText() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double parsed;
        if (absl::SimpleAtod(text, &parsed)) return "";
        return absl::StrCat("'", text, "' is not a number");
      },
      "", "number");
}

}  // namespace

FlagSet::FlagSet(std::string program, std::string description)
    : program_(std::move(program)),
      app_(std::make_unique<CLI::App>(std::move(description), program_)) {
  // A flag given twice takes its last value (distsim's main job adds a
  // default --trace that the user's own --trace overrides).
  app_->option_defaults()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  app_->formatter(std::make_shared<HelpFormatter>());
}

FlagSet::~FlagSet() = default;

void FlagSet::String(const std::string& name, std::string* value,
                     const std::string& help) {
  app_->add_option("--" + name, *value, help)->default_str(*value);
}

void FlagSet::Int(const std::string& name, int64_t* value,
                  const std::string& help) {
  app_->add_option("--" + name, *value, help)
      ->default_str(absl::StrCat(*value))
      ->check(IntegerText());
}

void FlagSet::Double(const std::string& name, double* value,
                     const std::string& help) {
  app_->add_option("--" + name, *value, help)
      ->default_str(absl::StrCat(*value))
      ->check(NumberText());
}

void FlagSet::Bool(const std::string& name, bool* value,
                   const std::string& help) {
  app_->add_flag("--" + name, *value, help)
      ->default_str(*value ? "true" : "false");
}

void FlagSet::Positionals(const std::string& name,
                          std::vector<std::string>* values,
                          const std::string& help) {
  app_->add_option(name, *values, help);
}

bool FlagSet::Given(const std::string& name) const {
  const CLI::Option* opt = app_->get_option_no_throw("--" + name);
  return opt != nullptr && opt->count() > 0;
}

std::string FlagSet::Usage() const { return app_->help(); }

absl::Status FlagSet::Parse(const std::vector<std::string>& args) {
  // CLI::App::parse takes the arguments last first. `--name=` (an empty
  // value) goes in as `--name ""`, which CLI11 reads as the empty string
  // (it would take `--name=` as `--name` and eat the next argument).
  std::vector<std::string> reversed;
  reversed.reserve(args.size() + 1);
  for (auto it = args.rbegin(); it != args.rend(); ++it) {
    const size_t eq = it->find('=');
    if (absl::StartsWith(*it, "--") && eq + 1 == it->size()) {
      const CLI::Option* opt = app_->get_option_no_throw(it->substr(0, eq));
      if (opt != nullptr && opt->get_items_expected_max() > 0) {
        reversed.emplace_back();
        reversed.push_back(it->substr(0, eq));
        continue;
      }
    }
    reversed.push_back(*it);
  }
  try {
    app_->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::fputs(Usage().c_str(), stdout);
    return absl::CancelledError("help requested");
  } catch (const CLI::ExtrasError&) {
    // What CLI11 did not take: the first is what the user got wrong.
    const std::vector<std::string> extras = app_->remaining();
    const std::string arg = extras.empty() ? "" : extras.front();
    if (absl::StartsWith(arg, "-")) {
      const std::string name = arg.substr(0, arg.find('='));
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag ", name, "\n", Usage()));
    }
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg,
                                                   "': flags are written "
                                                   "--name=value (see `",
                                                   program_, " --help`)"));
  } catch (const CLI::Error& e) {
    // Conversion and validation errors, a flag without its value: CLI11's
    // messages name the flag ("--steps: 'x' is not an integer").
    return absl::InvalidArgumentError(e.what());
  }
  return absl::OkStatus();
}

absl::Status FlagSet::Parse(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return Parse(args);
}

}  // namespace tools_flags

// The main of a fuzz target outside libFuzzer: runs every file named on the
// command line, and every file under every folder named (a file's folder
// when a file is named inside a corpus, as the replay tests do), through
// LLVMFuzzerTestOneInput, in name order. A target reports a failed
// invariant by aborting, so a bad input fails the run. Exits 1 when it found
// no input, so a replay test cannot pass on an empty corpus.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "tools/flags/flags.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

// Files under `path` (or `path` itself), skipping README files.
void Collect(const fs::path& path, std::vector<fs::path>& files) {
  std::error_code error;
  if (fs::is_directory(path, error)) {
    for (const auto& entry : fs::recursive_directory_iterator(path, error)) {
      if (entry.is_regular_file() && entry.path().filename() != "README") {
        files.push_back(entry.path());
      }
    }
  } else if (fs::is_regular_file(path, error)) {
    if (path.filename() == "README") {
      Collect(path.parent_path(), files);
    } else {
      files.push_back(path);
    }
  } else {
    std::fprintf(stderr, "replay: %s is neither a file nor a folder\n",
                 path.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> inputs;
  tools_flags::FlagSet flags("replay",
                             "Runs corpus files through the fuzz "
                             "target's LLVMFuzzerTestOneInput.");
  flags.Positionals("FILE_OR_FOLDER", &inputs,
                    "corpus files, or folders of them (searched recursively)");
  const absl::Status parsed = flags.Parse(argc, argv);
  if (absl::IsCancelled(parsed)) return 0;  // --help
  if (!parsed.ok()) {
    std::fprintf(stderr, "replay: %s\n", std::string(parsed.message()).c_str());
    return 2;
  }
  std::vector<fs::path> files;
  for (const std::string& input : inputs) Collect(input, files);
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  if (files.empty()) {
    std::fprintf(stderr,
                 "replay: no input files; name corpus files or folders\n");
    return 1;
  }
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
      return 1;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", file.c_str(),
                 bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()),
                           bytes.size());
  }
  std::fprintf(stderr, "replay: %zu inputs, no failure\n", files.size());
  return 0;
}

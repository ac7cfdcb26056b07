// The file-system steps that make checkpoints crash-safe: a file is written
// to a temporary name in its own directory, flushed to disk (fsync), renamed
// over its final name and the directory flushed, so that after a crash at
// any point a reader finds either the old file or the complete new one.
// Also the small directory helpers the checkpoint code needs.
//
// Example:
//   absl::Status s = WriteFileAtomically("/ckpt/checkpoint", text);
//   absl::StatusOr<std::string> back = ReadFileToString("/ckpt/checkpoint");
#ifndef DISTRIBUTE_CHECKPOINT_FILE_UTIL_H_
#define DISTRIBUTE_CHECKPOINT_FILE_UTIL_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distribute {
namespace checkpoint {

// A fault-injection seam for tests: called at the named points of a save
// ("data_written": the temporary data file is complete and on disk, not yet
// renamed; "data_committed": the data file has its final name, the state
// file is not yet updated; "state_written": the temporary state file is on
// disk, not yet renamed). A non-OK status aborts the save there, as a
// crash would (the temporary file is left behind). Null: no hook.
using SaveFaultHook = std::function<absl::Status(absl::string_view point,
                                                 const std::string& path)>;

// The suffix of temporary files; names containing it are never checkpoints.
inline constexpr absl::string_view kTempSuffix = ".tmp-";

// Writes `contents` to "<path>.tmp-<pid>", fsyncs it, calls `hook` with
// (`hook_point`, temporary path), renames it to `path` and fsyncs the
// directory. UNAVAILABLE naming the file and the system error on an I/O
// failure (the temporary file is removed then); the hook's status if it
// fails (the temporary file stays, as after a crash).
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents,
                                 const SaveFaultHook& hook = nullptr,
                                 absl::string_view hook_point = "");

// The whole file. NOT_FOUND if it does not exist; UNAVAILABLE on other
// errors.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// mkdir -p. UNAVAILABLE naming the directory on failure (FAILED_PRECONDITION
// when a component exists and is not a directory).
absl::Status CreateDirectories(const std::string& dir);

// Removes `path` and, for a directory, everything under it; OK if it does
// not exist. UNAVAILABLE naming what could not be removed.
absl::Status DeleteRecursively(const std::string& path);

// Removes one file; OK if it does not exist.
absl::Status DeleteFile(const std::string& path);

// The names (not paths) in `dir`, sorted, without "." and "..". NOT_FOUND if
// it does not exist.
absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir);

bool PathExists(const std::string& path);

// "<dir>/<name>", without doubling a trailing slash of dir.
std::string JoinPath(absl::string_view dir, absl::string_view name);
// What follows the last '/' ("ckpt-3" of "/a/ckpt-3").
absl::string_view Basename(absl::string_view path);
// What precedes the last '/' ("/a" of "/a/ckpt-3", "." without a slash).
std::string Dirname(absl::string_view path);

}  // namespace checkpoint
}  // namespace distribute

#endif  // DISTRIBUTE_CHECKPOINT_FILE_UTIL_H_

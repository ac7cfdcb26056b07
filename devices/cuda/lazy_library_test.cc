// LazyLibrary opens a library on first use and says why it cannot; a
// binary with the whole CUDA stack linked (platform, kernels, cuBLAS
// calls, NCCL communicator) has not mapped cuBLAS or NCCL before any of it
// runs, and maps them only when a call needs them.
#include "devices/cuda/lazy_library.h"

#include <fstream>
#include <string>

#include "devices/cuda/cuda_blas.h"
#include "devices/cuda/nccl_api.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devices {
namespace cuda {
namespace {

using ::testing::HasSubstr;

// The lines of /proc/self/maps that map a file named `library` (e.g.
// "libnccl.so.2"), or "" when none does.
std::string Mapped(const std::string& library) {
  std::ifstream in("/proc/self/maps");
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.find("/" + library) != std::string::npos) out += line + "\n";
  }
  return out;
}

TEST(LazyLibraryTest, MissingLibrarySaysWhatToDo) {
  LazyLibrary library("NoSuchLib", {"libdistsim_no_such_lib.so.9"});
  EXPECT_EQ(library.Symbol("anything"), nullptr);
  EXPECT_THAT(library.error(), HasSubstr("NoSuchLib could not be loaded"));
  EXPECT_THAT(library.error(), HasSubstr("libdistsim_no_such_lib.so.9"));
  EXPECT_THAT(library.error(), HasSubstr("LD_LIBRARY_PATH"));
}

TEST(LazyLibraryTest, FindsSymbolsAndNamesAMissingOne) {
  LazyLibrary library("libm", {"libdistsim_no_such_lib.so.9", "libm.so.6"});
  EXPECT_NE(library.Symbol("cos"), nullptr);
  EXPECT_STREQ(library.error(), "");
  EXPECT_EQ(library.Symbol("distsim_no_such_symbol"), nullptr);
  EXPECT_THAT(library.error(), HasSubstr("distsim_no_such_symbol"));
}

// Runs before anything in this binary calls into cuBLAS or NCCL.
TEST(LazyLibraryTest, CublasAndNcclAreMappedOnlyWhenCalled) {
  EXPECT_EQ(Mapped("libcublas.so"), "");
  EXPECT_EQ(Mapped("libcublasLt.so"), "");
  EXPECT_EQ(Mapped("libnccl.so"), "");
  // Asking NCCL's version opens it (the toolkit this was built with has
  // it; without it the version is 0 and the error says why).
  const int version = NcclVersion();
  if (version == 0) {
    EXPECT_THAT(NcclErrorString(kNcclSystemError),
                HasSubstr("NCCL could not be loaded"));
  } else {
    EXPECT_NE(Mapped("libnccl.so"), "");
  }
  EXPECT_EQ(Mapped("libcublas.so"), "");
}

}  // namespace
}  // namespace cuda
}  // namespace devices

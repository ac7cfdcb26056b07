// The parameter-server example, run as a user runs it: asynchronous steps
// from two workers still learn the data's weight.
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/subprocess.h"

namespace {

TEST(ParameterServerExampleTest, TwoWorkersLearnTheWeight) {
  auto run = distsim_test::RunToEnd(
      distsim_test::Runfile("examples/parameter_server"), {},
      distsim_test::TestTmpPath("parameter_server"), absl::Seconds(120));
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE(run->ok()) << run->err;
  absl::string_view out = absl::StripAsciiWhitespace(run->out);
  ASSERT_TRUE(absl::ConsumePrefix(&out, "w = ")) << run->out;
  float w = 0;
  ASSERT_TRUE(absl::SimpleAtof(out, &w)) << run->out;
  EXPECT_NEAR(w, 3.0f, 1e-2);
}

}  // namespace

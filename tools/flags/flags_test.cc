#include "tools/flags/flags.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tools_flags {
namespace {

using ::testing::HasSubstr;

TEST(FlagSetTest, ParsesEveryKind) {
  std::string s = "a";
  int64_t i = 1;
  double d = 0.5;
  bool b = false;
  FlagSet flags("t");
  flags.String("s", &s, "");
  flags.Int("i", &i, "");
  flags.Double("d", &d, "");
  flags.Bool("b", &b, "");
  ASSERT_TRUE(flags.Parse({"--s=xyz", "--i=-42", "--d=2.25", "--b"}).ok());
  EXPECT_EQ(s, "xyz");
  EXPECT_EQ(i, -42);
  EXPECT_EQ(d, 2.25);
  EXPECT_TRUE(b);
  EXPECT_TRUE(flags.Given("b"));
  EXPECT_FALSE(flags.Given("nope"));
  ASSERT_TRUE(flags.Parse({"--b=false"}).ok());
  EXPECT_FALSE(b);
  EXPECT_FALSE(flags.Given("i"));
  ASSERT_TRUE(flags.Parse({"--b=true", "--d=1e-3"}).ok());
  EXPECT_TRUE(b);
  EXPECT_EQ(d, 1e-3);
}

TEST(FlagSetTest, EmptyValuesAndRepeatedFlags) {
  std::string s = "default";
  std::string t = "t";
  int64_t i = 1;
  FlagSet flags("t");
  flags.String("s", &s, "");
  flags.String("t", &t, "");
  flags.Int("i", &i, "");
  // `--s=` is the empty string; it does not take the next argument.
  ASSERT_TRUE(flags.Parse({"--s=", "--i=3"}).ok());
  EXPECT_EQ(s, "");
  EXPECT_EQ(i, 3);
  // The last of a repeated flag wins; values may hold '='.
  ASSERT_TRUE(flags.Parse({"--i=4", "--i=5", "--t=a=b"}).ok());
  EXPECT_EQ(i, 5);
  EXPECT_EQ(t, "a=b");
}

TEST(FlagSetTest, RejectsBadInputNamingTheFlag) {
  int64_t i = 1;
  double d = 0.5;
  bool b = false;
  FlagSet flags("t");
  flags.Int("i", &i, "");
  flags.Double("d", &d, "");
  flags.Bool("b", &b, "");
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"--i=x"}, "--i"},
           {{"--i=1.5"}, "--i"},
           {{"--i=99999999999999999999"}, "--i"},
           {{"--i="}, "--i"},
           {{"--d=fast"}, "--d"},
           {{"--b=maybe"}, "--b"},
           {{"--j=1"}, "unknown flag --j"},
           {{"-j"}, "unknown flag -j"},
           {{"i=1"}, "unexpected argument 'i=1'"},
           {{"--i"}, "--i"},
       }) {
    const absl::Status status = flags.Parse(c.args);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.args[0];
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.says)) << c.args[0];
  }
  EXPECT_EQ(i, 1);  // Nothing was set by the failed parses.
  EXPECT_EQ(d, 0.5);
  EXPECT_FALSE(b);
}

TEST(FlagSetTest, HelpListsEveryFlagWithDefaultAndHelp) {
  std::string s;
  int64_t i = 7;
  bool b = true;
  FlagSet flags("prog sub");
  flags.String("s", &s, "a string");
  flags.Int("i", &i, "an integer");
  flags.Bool("b", &b, "a switch");
  const std::string usage = flags.Usage();
  EXPECT_THAT(usage, HasSubstr("`prog sub`"));
  EXPECT_THAT(usage, HasSubstr("--s (default: \"\")\n      a string"));
  EXPECT_THAT(usage, HasSubstr("--i (default: 7)\n      an integer"));
  EXPECT_THAT(usage, HasSubstr("--b (default: true)\n      a switch"));
  EXPECT_TRUE(absl::IsCancelled(flags.Parse({"--help"})));
  EXPECT_TRUE(absl::IsCancelled(flags.Parse({"-h"})));
  // An unknown flag's message lists the flags.
  EXPECT_THAT(std::string(flags.Parse({"--x"}).message()),
              HasSubstr("--i (default: 7)"));
}

TEST(FlagSetTest, PositionalsWhenDeclared) {
  std::vector<std::string> files;
  bool b = false;
  const char* argv[] = {"prog", "a", "--b", "c"};
  FlagSet flags("prog");
  flags.Bool("b", &b, "");
  flags.Positionals("FILE", &files, "input files");
  ASSERT_TRUE(flags.Parse(4, argv).ok());
  EXPECT_TRUE(b);
  EXPECT_EQ(files, (std::vector<std::string>{"a", "c"}));
}

}  // namespace
}  // namespace tools_flags

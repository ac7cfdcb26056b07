#include "distribute/cluster/slurm_hostlist.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace cluster {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct HostlistCase {
  std::string hostlist;
  std::vector<std::string> hosts;
};

class ExpandHostlistTest : public ::testing::TestWithParam<HostlistCase> {};

TEST_P(ExpandHostlistTest, Expands) {
  absl::StatusOr<std::vector<std::string>> hosts =
      ExpandHostlist(GetParam().hostlist);
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  EXPECT_EQ(*hosts, GetParam().hosts);
}

INSTANTIATE_TEST_SUITE_P(
    Valid, ExpandHostlistTest,
    ::testing::Values(
        HostlistCase{"node", {"node"}}, HostlistCase{"n1,n2", {"n1", "n2"}},
        HostlistCase{"t02n[13,41-43]",
                     {"t02n13", "t02n41", "t02n42", "t02n43"}},
        HostlistCase{"n[1-2],m5,o[3-4,6,7-9]",
                     {"n1", "n2", "m5", "o3", "o4", "o6", "o7", "o8", "o9"}},
        HostlistCase{"n[001-003]", {"n001", "n002", "n003"}},
        HostlistCase{"n[08-11]", {"n08", "n09", "n10", "n11"}},
        HostlistCase{"n[8-11]", {"n8", "n9", "n10", "n11"}},
        HostlistCase{"n[098-101]", {"n098", "n099", "n100", "n101"}},
        HostlistCase{"n[007,010]", {"n007", "n010"}},
        HostlistCase{"a[1-2]b[3-4]", {"a1b3", "a1b4", "a2b3", "a2b4"}},
        HostlistCase{"host1,rack[1-2]n[01-02]",
                     {"host1", "rack1n01", "rack1n02", "rack2n01", "rack2n02"}},
        HostlistCase{"rack[1-2]-node[5]-ib",
                     {"rack1-node5-ib", "rack2-node5-ib"}},
        HostlistCase{"[1-3]", {"1", "2", "3"}},
        HostlistCase{"gpu[2-2]", {"gpu2"}},
        HostlistCase{"b[2,1],a", {"b2", "b1", "a"}},
        HostlistCase{"n1,n1", {"n1", "n1"}},
        HostlistCase{"  n[1-2]\n", {"n1", "n2"}}));

struct BadHostlist {
  std::string hostlist;
  std::string message;
};

class ExpandHostlistErrorTest : public ::testing::TestWithParam<BadHostlist> {};

TEST_P(ExpandHostlistErrorTest, IsInvalidArgument) {
  absl::Status status = ExpandHostlist(GetParam().hostlist).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Invalid, ExpandHostlistErrorTest,
    ::testing::Values(
        BadHostlist{"",
                    "invalid Slurm hostlist: it is empty; expected e.g. "
                    "\"node[1-4]\""},
        BadHostlist{"  ",
                    "invalid Slurm hostlist: it is empty; expected e.g. "
                    "\"node[1-4]\""},
        BadHostlist{"n[1-3",
                    "invalid Slurm hostlist \"n[1-3\" at position 1: "
                    "\"[\" without \"]\""},
        BadHostlist{"n1-3]",
                    "invalid Slurm hostlist \"n1-3]\" at position 4: "
                    "\"]\" without \"[\""},
        BadHostlist{"n[1[2]]",
                    "invalid Slurm hostlist \"n[1[2]]\" at "
                    "position 3: nested \"[\""},
        BadHostlist{"n[5-3]",
                    "invalid Slurm hostlist \"n[5-3]\" at position "
                    "2: range \"5-3\" is reversed; write it 3-5"},
        BadHostlist{"n[]",
                    "invalid Slurm hostlist \"n[]\" at position 1: "
                    "empty bracket group \"[]\""},
        BadHostlist{"n[1,,2]",
                    "invalid Slurm hostlist \"n[1,,2]\" at "
                    "position 4: empty item in a bracket group"},
        BadHostlist{"n[a-b]",
                    "invalid Slurm hostlist \"n[a-b]\" at position "
                    "2: \"a-b\" is not N or N-M with decimal N, M"},
        BadHostlist{"n[1-]",
                    "invalid Slurm hostlist \"n[1-]\" at position 2: "
                    "\"1-\" is not N or N-M with decimal N, M"},
        BadHostlist{"n[1-2-3]",
                    "invalid Slurm hostlist \"n[1-2-3]\" at "
                    "position 2: \"1-2-3\" is not N or N-M"},
        BadHostlist{"n1,,n2",
                    "invalid Slurm hostlist \"n1,,n2\" at position "
                    "3: empty host name"},
        BadHostlist{"n1,",
                    "invalid Slurm hostlist \"n1,\" at position 3: "
                    "empty host name"},
        BadHostlist{",n1",
                    "invalid Slurm hostlist \",n1\" at position 0: "
                    "empty host name"}));

TEST(ExpandHostlistTest, RejectsHugeExpansions) {
  absl::Status status = ExpandHostlist("n[0-99999999]").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("expands to more than 1048576 hosts"));
  status = ExpandHostlist("a[0-2047]b[0-1023]").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("expands to more than 1048576 hosts"));
}

// Long names multiplied by bracket groups: few enough hosts, but their
// names would take gigabytes (a fuzzer's input took 2.2 GB). Names are
// bounded too, and a list just under the bound still expands.
TEST(ExpandHostlistTest, RejectsExpansionsOfHugeNames) {
  const std::string name(1000, 'x');
  auto huge = ExpandHostlist(name + "[1-1000]y[1-100]");
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(huge.status().message(),
              HasSubstr("expands to more than 67108864 bytes of host names"));
  auto tail = ExpandHostlist("a[1-1000]b[1-100]" + name);
  EXPECT_EQ(tail.status().code(), absl::StatusCode::kInvalidArgument);
  auto fits = ExpandHostlist(name + "[1-1000]y[1-10]");
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(fits->size(), 10000u);
  EXPECT_EQ(fits->back(), name + "1000y10");
}

TEST(ExpandTasksPerNodeTest, Expands) {
  EXPECT_THAT(*ExpandTasksPerNode("2(x3),1"), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(*ExpandTasksPerNode("3(x2),2,1"), ElementsAre(3, 3, 2, 1));
  EXPECT_THAT(*ExpandTasksPerNode("4"), ElementsAre(4));
  EXPECT_THAT(*ExpandTasksPerNode("1(x1)"), ElementsAre(1));
  EXPECT_THAT(*ExpandTasksPerNode(" 8(x2) "), ElementsAre(8, 8));
}

TEST(ExpandTasksPerNodeTest, Errors) {
  for (const char* bad : {"", "x", "2(x)", "2(3)", "2(x3", "(x3)", "2,,1", "-1",
                          "2(x-1)", "2x3", "1.5"}) {
    absl::Status status = ExpandTasksPerNode(bad).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("invalid Slurm tasks-per-node list"))
        << bad;
  }
  EXPECT_EQ(ExpandTasksPerNode("2(x3),1x").status().message(),
            "invalid Slurm tasks-per-node list \"2(x3),1x\": entry \"1x\" is "
            "malformed; expected entries like \"2\" or \"2(x3)\", e.g. "
            "\"2(x3),1\"");
  EXPECT_EQ(ExpandTasksPerNode("2(x0)").status().message(),
            "invalid Slurm tasks-per-node list \"2(x0)\": entry \"2(x0)\" "
            "repeats 0 times; expected entries like \"2\" or \"2(x3)\", e.g. "
            "\"2(x3),1\"");
}

}  // namespace
}  // namespace cluster
}  // namespace distribute

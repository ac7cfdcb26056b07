// --plot: the gnuplot script's checks, and pictures that gnuplot really
// draws, from the plot module and from the collective and validate
// commands.
#include "tools/distsim/plot.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tools/distsim/subcommands.h"

namespace distsim {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name);
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool IsPng(const std::string& bytes) {
  return bytes.size() > 8 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0;
}

Plot TwoLines() {
  Plot plot;
  plot.title = "it's a test";  // a quote, which gnuplot takes doubled
  plot.x_label = "bytes";
  plot.y_label = "GB/s";
  plot.log_x = true;
  plot.x_bytes = true;
  plot.series.push_back({"ring", {{1024, 1.5}, {1 << 20, 40}, {1 << 30, 360}}});
  plot.series.push_back({"tree", {{1024, 2.5}, {1 << 20, 30}}});
  return plot;
}

TEST(GnuplotScriptTest, WritesEverySeriesInline) {
  absl::StatusOr<std::string> script = GnuplotScript(TwoLines(), "out.svg");
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_TRUE(absl::StrContains(*script, "set terminal svg")) << *script;
  EXPECT_TRUE(absl::StrContains(*script, "set title 'it''s a test'"));
  EXPECT_TRUE(absl::StrContains(*script, "title 'ring'"));
  EXPECT_TRUE(absl::StrContains(*script, "title 'tree'"));
  EXPECT_TRUE(absl::StrContains(*script, "1073741824 360\n"));
}

TEST(GnuplotScriptTest, RefusesWhatItCannotDraw) {
  EXPECT_EQ(GnuplotScript(TwoLines(), "out.jpg").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckPlotPath("picture").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckPlotPath("a/b.PNG").ok());
  Plot empty = TwoLines();
  empty.series.clear();
  EXPECT_EQ(GnuplotScript(empty, "out.png").status().code(),
            absl::StatusCode::kInvalidArgument);
  Plot zero = TwoLines();
  zero.series[0].points.push_back({0, 1});  // x = 0 on a log axis
  absl::Status s = GnuplotScript(zero, "out.png").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "logarithmic")) << s;
}

TEST(WritePlotTest, DrawsPngAndSvg) {
  const std::string png = TempPath("lines.png");
  ASSERT_TRUE(WritePlot(TwoLines(), png).ok());
  EXPECT_TRUE(IsPng(Contents(png)));
  const std::string svg = TempPath("lines.svg");
  ASSERT_TRUE(WritePlot(TwoLines(), svg).ok());
  const std::string drawn = Contents(svg);
  EXPECT_TRUE(absl::StrContains(drawn, "<svg")) << drawn.substr(0, 200);
  EXPECT_TRUE(absl::StrContains(drawn, "ring"));
}

// A failed drawing leaves a picture already there as it was.
TEST(WritePlotTest, AFailedDrawingKeepsTheOldPicture) {
  const std::string png = TempPath("kept.png");
  ASSERT_TRUE(WritePlot(TwoLines(), png).ok());
  const std::string before = Contents(png);
  Plot bad = TwoLines();
  bad.title = "a title\nacross two lines";  // breaks gnuplot's quoted string
  absl::Status s = WritePlot(bad, png);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "gnuplot could not draw")) << s;
  EXPECT_EQ(Contents(png), before);
  EXPECT_TRUE(Contents(TempPath("kept.partial.png")).empty());
}

TEST(WritePlotTest, AnUnwritablePlaceIsAnError) {
  absl::Status s =
      WritePlot(TwoLines(), TempPath("no/such/directory/lines.png"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

TEST(PlotFlagTest, CollectiveDrawsItsSweep) {
  const std::string path = TempPath("sweep.png");
  absl::Status s =
      RunCollective({"--topology=dgx_h100", "--op=all_reduce",
                     "--algorithm=nccl", "--min_bytes=1K", "--max_bytes=1M",
                     "--csv", absl::StrCat("--plot=", path)});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(IsPng(Contents(path)));
}

TEST(PlotFlagTest, ValidateDrawsPredictedAgainstMeasured) {
  const std::string path = TempPath("validate.svg");
  absl::Status s =
      RunValidate({"--split=holdout", "--json", absl::StrCat("--plot=", path)});
  ASSERT_TRUE(s.ok()) << s;
  const std::string drawn = Contents(path);
  EXPECT_TRUE(absl::StrContains(drawn, "<svg"));
  EXPECT_TRUE(absl::StrContains(drawn, "holdout"));
}

TEST(PlotFlagTest, ABadExtensionFailsBeforeTheSweep) {
  absl::Status s = RunCollective({"--topology=dgx_h100", "--algorithm=ring",
                                  "--max_bytes=8G", "--plot=sweep.jpg"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "--plot=sweep.jpg")) << s;
}

}  // namespace
}  // namespace distsim

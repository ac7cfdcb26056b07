#include "distribute/cluster/json.h"

#include <cmath>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace cluster {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(JsonTest, ParsesScalars) {
  EXPECT_TRUE(ParseJson("null")->is_null());
  EXPECT_TRUE(ParseJson("true")->get<bool>());
  EXPECT_FALSE(ParseJson(" false ")->get<bool>());
  EXPECT_EQ(ParseJson("\"hi\"")->get<std::string>(), "hi");
  EXPECT_EQ(JsonInt(*ParseJson("-12")), -12);
  EXPECT_DOUBLE_EQ(ParseJson("2.5e1")->get<double>(), 25.0);
  EXPECT_EQ(ParseJson(R"("\u00e9\ud83d\ude00")")->get<std::string>(),
            "\xC3\xA9\xF0\x9F\x98\x80");
}

TEST(JsonTest, IntegerValuesAreExact) {
  EXPECT_EQ(JsonInt(*ParseJson("9223372036854775807")),
            int64_t{9223372036854775807});
  EXPECT_EQ(JsonInt(*ParseJson("-9223372036854775807")),
            int64_t{-9223372036854775807});
  EXPECT_EQ(JsonInt(*ParseJson("2.0")), 2);
  EXPECT_EQ(JsonInt(*ParseJson("1e3")), 1000);
  EXPECT_EQ(JsonInt(*ParseJson("1.5")), std::nullopt);
  // Beyond int64: a number, and no exact integer.
  absl::StatusOr<Json> big = ParseJson("9223372036854775808");
  ASSERT_TRUE(big.ok());
  EXPECT_TRUE(big->is_number());
  EXPECT_EQ(JsonInt(*big), std::nullopt);
  EXPECT_EQ(JsonInt(*ParseJson("1e30")), std::nullopt);
  EXPECT_EQ(JsonInt(*ParseJson("\"1\"")), std::nullopt);
}

TEST(JsonTest, KeepsDocumentOrderAndFindsMembers) {
  absl::StatusOr<Json> v = ParseJson(R"({
      "b": [1, "two", {"c": null}],
      "a": {}
  })");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_TRUE(v->is_object());
  EXPECT_EQ(v->begin().key(), "b");
  const Json* b = JsonMember(*v, "b");
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->size(), 3u);
  EXPECT_EQ(JsonInt((*b)[0]), 1);
  EXPECT_TRUE(JsonMember((*b)[2], "c")->is_null());
  EXPECT_EQ(JsonMember(*v, "missing"), nullptr);
  EXPECT_EQ(JsonMember(*b, "x"), nullptr);  // not an object
  EXPECT_EQ(DumpJson(*v), R"({"b":[1,"two",{"c":null}],"a":{}})");
}

TEST(JsonTest, TypeNames) {
  EXPECT_EQ(JsonTypeName(*ParseJson("null")), "null");
  EXPECT_EQ(JsonTypeName(*ParseJson("true")), "boolean");
  EXPECT_EQ(JsonTypeName(*ParseJson("1")), "number");
  EXPECT_EQ(JsonTypeName(*ParseJson("-1.5")), "number");
  EXPECT_EQ(JsonTypeName(*ParseJson("\"\"")), "string");
  EXPECT_EQ(JsonTypeName(*ParseJson("[]")), "array");
  EXPECT_EQ(JsonTypeName(*ParseJson("{}")), "object");
}

struct BadJson {
  std::string text;
  std::string message_start;
};

class JsonErrorTest : public ::testing::TestWithParam<BadJson> {};

TEST_P(JsonErrorTest, SaysWhereAndWhy) {
  absl::StatusOr<Json> v = ParseJson(GetParam().text);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(v.status().message()),
              StartsWith(GetParam().message_start));
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, JsonErrorTest,
    ::testing::Values(
        BadJson{"", "line 1, column 1: "}, BadJson{"   ", "line 1, column 4: "},
        BadJson{R"({"a": 1,})", "line 1, column 9: "},
        BadJson{"[1, 2,]", "line 1, column 7: "},
        BadJson{"{\n  \"a\": 1\n  \"b\": 2\n}", "line 3, column 5: "},
        BadJson{R"(["abc)", "line 1, column 6: "},
        BadJson{"012", "line 1, column 3: "},
        BadJson{"{} x", "line 1, column 4: "},
        BadJson{"\"a\tb\"", "line 1, column 3: "},
        BadJson{"{'a': 1}", "line 1, column 2: "},
        BadJson{"1e999", "number overflow"},
        BadJson{R"({"a": 1, "a": 2})",
                "duplicate object key \"a\" in the object at /"},
        BadJson{R"({"cluster": {"worker": [], "worker": []}})",
                "duplicate object key \"worker\" in the object at /cluster"},
        BadJson{R"([0, {"x": [{"k": 1, "k": 2}]}])",
                "duplicate object key \"k\" in the object at /1/x/0"}));

TEST(JsonTest, RefusesDeepNesting) {
  const std::string deep = std::string(300, '[') + std::string(300, ']');
  absl::StatusOr<Json> v = ParseJson(deep);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(v.status().message()),
              HasSubstr("nesting deeper than 256 levels"));
  const std::string ok = std::string(200, '[') + std::string(200, ']');
  EXPECT_TRUE(ParseJson(ok).ok());
}

TEST(JsonTest, DumpAlwaysWritesValidJson) {
  const std::string text = "a\"b\\c\nd\te\x01";
  EXPECT_EQ(DumpJson(Json(text)), "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
  EXPECT_EQ(ParseJson(DumpJson(Json(text)))->get<std::string>(), text);
  // Non-finite numbers as null, bytes that are not UTF-8 as U+FFFD.
  Json row = {{"loss", std::numeric_limits<double>::quiet_NaN()},
              {"inf", std::numeric_limits<double>::infinity()},
              {"name", std::string("x\xFFy")}};
  EXPECT_EQ(DumpJson(row),
            "{\"loss\":null,\"inf\":null,\"name\":\"x\xEF\xBF\xBDy\"}");
  EXPECT_TRUE(ParseJson(DumpJson(row)).ok());
}

}  // namespace
}  // namespace cluster
}  // namespace distribute

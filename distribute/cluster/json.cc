#include "distribute/cluster/json.h"

#include <cmath>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "devices/status_macros.h"

namespace distribute {
namespace cluster {

JsonValue JsonValue::Bool(bool value) {
  JsonValue v;
  v.type_ = Type::kBool;
  v.bool_ = value;
  return v;
}

JsonValue JsonValue::Integer(int64_t value) {
  JsonValue v;
  v.type_ = Type::kNumber;
  v.number_ = static_cast<double>(value);
  v.integer_ = value;
  return v;
}

JsonValue JsonValue::Number(double value) {
  JsonValue v;
  v.type_ = Type::kNumber;
  v.number_ = value;
  return v;
}

JsonValue JsonValue::String(std::string value) {
  JsonValue v;
  v.type_ = Type::kString;
  v.string_ = std::move(value);
  return v;
}

JsonValue JsonValue::MakeArray(Array elements) {
  JsonValue v;
  v.type_ = Type::kArray;
  v.array_ = std::move(elements);
  return v;
}

JsonValue JsonValue::MakeObject(Object members) {
  JsonValue v;
  v.type_ = Type::kObject;
  v.object_ = std::move(members);
  return v;
}

std::optional<int64_t> JsonValue::int_value() const {
  if (type_ != Type::kNumber) return std::nullopt;
  if (integer_.has_value()) return integer_;
  // Whole numbers written with a fraction or exponent, where exact.
  constexpr double kMaxExact = 9007199254740992.0;  // 2^53
  if (std::isfinite(number_) && std::trunc(number_) == number_ &&
      std::fabs(number_) <= kMaxExact) {
    return static_cast<int64_t>(number_);
  }
  return std::nullopt;
}

const JsonValue* JsonValue::Find(absl::string_view key) const {
  for (const auto& [name, value] : object_) {
    if (name == key) return &value;
  }
  return nullptr;
}

absl::string_view JsonValue::TypeName(Type type) {
  switch (type) {
    case Type::kNull:
      return "null";
    case Type::kBool:
      return "boolean";
    case Type::kNumber:
      return "number";
    case Type::kString:
      return "string";
    case Type::kArray:
      return "array";
    case Type::kObject:
      return "object";
  }
  return "unknown";
}

namespace {

constexpr int kMaxDepth = 256;

// Recursive-descent parser over `text_`; `pos_` is the next unread byte.
class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<JsonValue> ParseDocument() {
    SkipWhitespace();
    absl::StatusOr<JsonValue> value = ParseValue(0);
    if (!value.ok()) return value;
    SkipWhitespace();
    if (pos_ < text_.size()) {
      return Error(pos_, "unexpected content after the JSON value");
    }
    return value;
  }

 private:
  absl::Status Error(size_t at, absl::string_view what) const {
    int64_t line = 1;
    int64_t column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string found = at < text_.size()
                            ? absl::StrCat("found ", Describe(text_[at]))
                            : std::string("found the end of the input");
    return absl::InvalidArgumentError(absl::StrFormat(
        "line %d, column %d: %s (%s)", line, column, what, found));
  }

  static std::string Describe(char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) return absl::StrFormat("byte 0x%02x", u);
    return absl::StrCat("'", std::string(1, c), "'");
  }

  void SkipWhitespace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool AtEnd() const { return pos_ >= text_.size(); }

  absl::StatusOr<JsonValue> ParseValue(int depth) {
    if (AtEnd()) return Error(pos_, "expected a JSON value");
    switch (text_[pos_]) {
      case '{':
        return ParseObject(depth + 1);
      case '[':
        return ParseArray(depth + 1);
      case '"': {
        ASSIGN_OR_RETURN(std::string s, ParseString());
        return JsonValue::String(std::move(s));
      }
      case 't':
        return ParseLiteral("true", JsonValue::Bool(true));
      case 'f':
        return ParseLiteral("false", JsonValue::Bool(false));
      case 'n':
        return ParseLiteral("null", JsonValue());
      default:
        if (text_[pos_] == '-' ||
            absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_]))) {
          return ParseNumber();
        }
        return Error(pos_, "expected a JSON value");
    }
  }

  absl::StatusOr<JsonValue> ParseLiteral(absl::string_view word,
                                         JsonValue value) {
    if (text_.substr(pos_, word.size()) != word) {
      return Error(pos_, absl::StrCat("expected '", word, "'"));
    }
    pos_ += word.size();
    return value;
  }

  absl::StatusOr<JsonValue> ParseObject(int depth) {
    if (depth > kMaxDepth) {
      return Error(pos_,
                   absl::StrCat("nesting deeper than ", kMaxDepth, " levels"));
    }
    ++pos_;  // '{'
    JsonValue::Object members;
    absl::flat_hash_set<std::string> keys;  // to find duplicates at once
    SkipWhitespace();
    if (!AtEnd() && text_[pos_] == '}') {
      ++pos_;
      return JsonValue::MakeObject(std::move(members));
    }
    while (true) {
      SkipWhitespace();
      if (AtEnd() || text_[pos_] != '"') {
        return Error(pos_, members.empty()
                               ? "expected a string key or '}' in an object"
                               : "expected a string key after ',' in an "
                                 "object, as JSON allows no trailing comma");
      }
      const size_t key_pos = pos_;
      ASSIGN_OR_RETURN(std::string key, ParseString());
      if (!keys.insert(key).second) {
        return Error(key_pos,
                     absl::StrCat("duplicate object key \"", key, "\""));
      }
      SkipWhitespace();
      if (AtEnd() || text_[pos_] != ':') {
        return Error(pos_, "expected ':' after an object key");
      }
      ++pos_;
      SkipWhitespace();
      ASSIGN_OR_RETURN(JsonValue value, ParseValue(depth));
      members.emplace_back(std::move(key), std::move(value));
      SkipWhitespace();
      if (AtEnd()) return Error(pos_, "expected ',' or '}' in an object");
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (text_[pos_] == '}') {
        ++pos_;
        return JsonValue::MakeObject(std::move(members));
      }
      return Error(pos_, "expected ',' or '}' in an object");
    }
  }

  absl::StatusOr<JsonValue> ParseArray(int depth) {
    if (depth > kMaxDepth) {
      return Error(pos_,
                   absl::StrCat("nesting deeper than ", kMaxDepth, " levels"));
    }
    ++pos_;  // '['
    JsonValue::Array elements;
    SkipWhitespace();
    if (!AtEnd() && text_[pos_] == ']') {
      ++pos_;
      return JsonValue::MakeArray(std::move(elements));
    }
    while (true) {
      SkipWhitespace();
      if (!AtEnd() && text_[pos_] == ']') {
        return Error(pos_,
                     "expected a value after ',' in an array, as JSON "
                     "allows no trailing comma");
      }
      ASSIGN_OR_RETURN(JsonValue value, ParseValue(depth));
      elements.push_back(std::move(value));
      SkipWhitespace();
      if (AtEnd()) return Error(pos_, "expected ',' or ']' in an array");
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (text_[pos_] == ']') {
        ++pos_;
        return JsonValue::MakeArray(std::move(elements));
      }
      return Error(pos_, "expected ',' or ']' in an array");
    }
  }

  // Reads 4 hex digits at pos_.
  absl::StatusOr<uint32_t> ParseHex4() {
    uint32_t code = 0;
    for (int i = 0; i < 4; ++i) {
      if (AtEnd()) return Error(pos_, "expected 4 hex digits after \\u");
      const char c = text_[pos_];
      uint32_t digit;
      if (c >= '0' && c <= '9') {
        digit = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return Error(pos_, "expected 4 hex digits after \\u");
      }
      code = code * 16 + digit;
      ++pos_;
    }
    return code;
  }

  static void AppendUtf8(uint32_t code, std::string* out) {
    if (code < 0x80) {
      out->push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (code >> 6)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (code >> 12)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (code >> 18)));
      out->push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  absl::StatusOr<std::string> ParseString() {
    const size_t start = pos_;
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (AtEnd()) {
        return Error(start, "unterminated string");
      }
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        return Error(pos_, "control character in a string; escape it");
      }
      if (c != '\\') {
        out.push_back(c);
        ++pos_;
        continue;
      }
      ++pos_;  // '\\'
      if (AtEnd()) return Error(start, "unterminated string");
      const char e = text_[pos_];
      ++pos_;
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          const size_t escape_pos = pos_ - 2;
          ASSIGN_OR_RETURN(uint32_t code, ParseHex4());
          uint32_t cp = code;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u") {
              return Error(escape_pos,
                           "high surrogate \\u escape without a low one");
            }
            pos_ += 2;
            ASSIGN_OR_RETURN(uint32_t low, ParseHex4());
            if (low < 0xDC00 || low > 0xDFFF) {
              return Error(escape_pos,
                           "high surrogate \\u escape without a low one");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return Error(escape_pos,
                         "low surrogate \\u escape without a "
                         "high one");
          }
          AppendUtf8(cp, &out);
          break;
        }
        default:
          return Error(pos_ - 1, "invalid escape in a string");
      }
    }
  }

  absl::StatusOr<JsonValue> ParseNumber() {
    const size_t start = pos_;
    auto digits = [this]() {
      size_t n = 0;
      while (!AtEnd() &&
             absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_]))) {
        ++pos_;
        ++n;
      }
      return n;
    };
    if (text_[pos_] == '-') ++pos_;
    if (AtEnd() ||
        !absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_]))) {
      return Error(pos_, "expected a digit in a number");
    }
    if (text_[pos_] == '0') {
      ++pos_;
      if (!AtEnd() &&
          absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_]))) {
        return Error(pos_, "leading zeros are not allowed in a number");
      }
    } else {
      digits();
    }
    bool integral = true;
    if (!AtEnd() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (digits() == 0) {
        return Error(pos_, "expected a digit after '.' in a number");
      }
    }
    if (!AtEnd() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (!AtEnd() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) {
        return Error(pos_, "expected a digit in a number's exponent");
      }
    }
    const absl::string_view literal = text_.substr(start, pos_ - start);
    if (integral) {
      int64_t value;
      if (absl::SimpleAtoi(literal, &value)) return JsonValue::Integer(value);
    }
    double value = 0;
    if (!absl::SimpleAtod(literal, &value) || !std::isfinite(value)) {
      return Error(start, "number out of the range of a double");
    }
    return JsonValue::Number(value);
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<JsonValue> ParseJson(absl::string_view text) {
  return Parser(text).ParseDocument();
}

std::string JsonQuote(absl::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace cluster
}  // namespace distribute

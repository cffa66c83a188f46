//===- Json.cpp - A small, strict JSON reader -----------------------------===//

#include "Runtime/Json.h"

#include <charconv>
#include <unordered_set>

using namespace tessel;

const JsonValue *JsonValue::find(std::string_view key) const {
  for (const auto &member : object)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

const char *tessel::jsonTypeName(JsonValue::Type type) {
  switch (type) {
  case JsonValue::Type::Null:
    return "null";
  case JsonValue::Type::Bool:
    return "a boolean";
  case JsonValue::Type::Number:
    return "a number";
  case JsonValue::Type::String:
    return "a string";
  case JsonValue::Type::Array:
    return "an array";
  case JsonValue::Type::Object:
    return "an object";
  }
  return "?";
}

std::pair<unsigned, unsigned> tessel::lineAndColumn(std::string_view text,
                                                    size_t offset) {
  unsigned line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

class Parser {
public:
  Parser(std::string_view text, std::string_view name)
      : text(text), name(name) {}

  Result<JsonValue> parseDocument() {
    JsonValue root;
    skipSpace();
    if (!parseValue(root, 0))
      return takeError();
    skipSpace();
    if (!atEnd()) {
      fail("unexpected " + describeHere() + " after the document");
      return takeError();
    }
    return root;
  }

private:
  std::string_view text;
  std::string_view name;
  size_t pos = 0;
  Status error;

  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return atEnd() ? '\0' : text[pos]; }

  bool fail(const std::string &message) { return failAt(pos, message); }
  bool failAt(size_t offset, const std::string &message) {
    auto [line, col] = lineAndColumn(text, offset);
    error = Status::error(std::string(name) + ":" + std::to_string(line) + ":" +
                          std::to_string(col) + ": error: " + message);
    return false;
  }
  Status takeError() { return std::move(error); }

  // Names the character at `pos` for messages; raw bytes may be unprintable.
  std::string describeHere() const {
    if (atEnd())
      return "end of input";
    unsigned char c = text[pos];
    if (c >= 0x20 && c < 0x7f)
      return std::string("'") + char(c) + "'";
    static const char hex[] = "0123456789abcdef";
    return std::string("byte 0x") + hex[c >> 4] + hex[c & 15];
  }

  void skipSpace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                        peek() == '\r'))
      ++pos;
  }

  bool parseValue(JsonValue &out, unsigned depth);
  bool parseLiteral(JsonValue &out);
  bool parseNumber(JsonValue &out);
  bool parseString(std::string &out);
  bool parseEscape(std::string &out);
  bool parseHex4(unsigned &out);
  bool parseArray(JsonValue &out, unsigned depth);
  bool parseObject(JsonValue &out, unsigned depth);
};

bool Parser::parseValue(JsonValue &out, unsigned depth) {
  out.offset = pos;
  switch (peek()) {
  case '{':
    return parseObject(out, depth + 1);
  case '[':
    return parseArray(out, depth + 1);
  case '"':
    out.type = JsonValue::Type::String;
    return parseString(out.string);
  case 't':
  case 'f':
  case 'n':
    return parseLiteral(out);
  default:
    if (peek() == '-' || isDigit(peek()))
      return parseNumber(out);
    return fail("expected a value, got " + describeHere());
  }
}

bool Parser::parseLiteral(JsonValue &out) {
  static const struct {
    std::string_view word;
    JsonValue::Type type;
    bool value;
  } literals[] = {{"true", JsonValue::Type::Bool, true},
                  {"false", JsonValue::Type::Bool, false},
                  {"null", JsonValue::Type::Null, false}};
  for (const auto &lit : literals) {
    if (text.substr(pos, lit.word.size()) == lit.word) {
      out.type = lit.type;
      out.boolean = lit.value;
      pos += lit.word.size();
      return true;
    }
  }
  return fail("expected a value, got " + describeHere());
}

// Follows the JSON grammar exactly (no leading zeros, '+', '.5', hex, NaN);
// std::from_chars converts without depending on the C locale.
bool Parser::parseNumber(JsonValue &out) {
  size_t start = pos;
  bool isInteger = true;
  if (peek() == '-')
    ++pos;
  if (peek() == '0') {
    ++pos;
  } else if (isDigit(peek())) {
    while (isDigit(peek()))
      ++pos;
  } else {
    return fail("expected a digit, got " + describeHere());
  }
  if (peek() == '.') {
    isInteger = false;
    ++pos;
    if (!isDigit(peek()))
      return fail("expected a digit after '.', got " + describeHere());
    while (isDigit(peek()))
      ++pos;
  }
  if (peek() == 'e' || peek() == 'E') {
    isInteger = false;
    ++pos;
    if (peek() == '+' || peek() == '-')
      ++pos;
    if (!isDigit(peek()))
      return fail("expected a digit in the exponent, got " + describeHere());
    while (isDigit(peek()))
      ++pos;
  }
  const char *first = text.data() + start, *last = text.data() + pos;
  out.type = JsonValue::Type::Number;
  auto [end, ec] = std::from_chars(first, last, out.number);
  if (ec == std::errc::result_out_of_range)
    return failAt(start, "number out of range");
  int64_t integer;
  if (isInteger && std::from_chars(first, last, integer).ec == std::errc())
    out.integer = integer;
  return ec == std::errc() && end == last ? true
                                          : failAt(start, "malformed number");
}

bool Parser::parseString(std::string &out) {
  size_t start = pos++; // the opening quote
  while (true) {
    if (atEnd())
      return failAt(start, "unterminated string");
    char c = text[pos];
    if (c == '"') {
      ++pos;
      return true;
    }
    if (static_cast<unsigned char>(c) < 0x20)
      return fail("control character in string (write it as an escape)");
    if (c == '\\') {
      if (!parseEscape(out))
        return false;
      continue;
    }
    out += c;
    ++pos;
  }
}

bool Parser::parseHex4(unsigned &out) {
  out = 0;
  for (int i = 0; i < 4; ++i, ++pos) {
    char c = peek();
    unsigned digit;
    if (isDigit(c))
      digit = c - '0';
    else if (c >= 'a' && c <= 'f')
      digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      digit = c - 'A' + 10;
    else
      return fail("expected 4 hex digits after \\u");
    out = out * 16 + digit;
  }
  return true;
}

void appendUtf8(std::string &out, unsigned cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3f));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

bool Parser::parseEscape(std::string &out) {
  size_t start = pos++; // the backslash
  char c = peek();
  static const std::string_view from = "\"\\/bfnrt", to = "\"\\/\b\f\n\r\t";
  size_t simple = atEnd() ? std::string_view::npos : from.find(c);
  if (simple != std::string_view::npos) {
    out += to[simple];
    ++pos;
    return true;
  }
  if (c != 'u')
    return failAt(start, "invalid escape in string");
  ++pos;
  unsigned cp;
  if (!parseHex4(cp))
    return false;
  if (cp >= 0xdc00 && cp <= 0xdfff)
    return failAt(start, "unpaired low surrogate in \\u escape");
  if (cp >= 0xd800 && cp <= 0xdbff) {
    unsigned low;
    if (text.substr(pos, 2) != "\\u")
      return failAt(start, "unpaired high surrogate in \\u escape");
    pos += 2;
    if (!parseHex4(low))
      return false;
    if (low < 0xdc00 || low > 0xdfff)
      return failAt(start, "unpaired high surrogate in \\u escape");
    cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
  }
  appendUtf8(out, cp);
  return true;
}

bool Parser::parseArray(JsonValue &out, unsigned depth) {
  if (depth > kMaxJsonDepth)
    return fail("nesting deeper than " + std::to_string(kMaxJsonDepth));
  out.type = JsonValue::Type::Array;
  ++pos; // '['
  skipSpace();
  if (peek() == ']') {
    ++pos;
    return true;
  }
  while (true) {
    out.array.emplace_back();
    if (!parseValue(out.array.back(), depth))
      return false;
    skipSpace();
    if (peek() == ']') {
      ++pos;
      return true;
    }
    if (peek() != ',')
      return fail("expected ',' or ']' in array, got " + describeHere());
    ++pos;
    skipSpace();
  }
}

bool Parser::parseObject(JsonValue &out, unsigned depth) {
  if (depth > kMaxJsonDepth)
    return fail("nesting deeper than " + std::to_string(kMaxJsonDepth));
  out.type = JsonValue::Type::Object;
  ++pos; // '{'
  skipSpace();
  if (peek() == '}') {
    ++pos;
    return true;
  }
  std::unordered_set<std::string> keys; // a linear search would be quadratic
  while (true) {
    if (peek() != '"')
      return fail("expected a member name in quotes, got " + describeHere());
    size_t keyPos = pos;
    std::string key;
    if (!parseString(key))
      return false;
    if (!keys.insert(key).second)
      return failAt(keyPos, "duplicate member '" + key + "'");
    skipSpace();
    if (peek() != ':')
      return fail("expected ':' after member name, got " + describeHere());
    ++pos;
    skipSpace();
    out.object.emplace_back(std::move(key), JsonValue());
    if (!parseValue(out.object.back().second, depth))
      return false;
    skipSpace();
    if (peek() == '}') {
      ++pos;
      return true;
    }
    if (peek() != ',')
      return fail("expected ',' or '}' in object, got " + describeHere());
    ++pos;
    skipSpace();
  }
}

} // namespace

Result<JsonValue> tessel::parseJson(std::string_view text,
                                    std::string_view name) {
  return Parser(text, name).parseDocument();
}

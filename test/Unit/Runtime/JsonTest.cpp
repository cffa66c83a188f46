//===- JsonTest.cpp - The runtime's JSON reader ---------------------------===//

#include "Runtime/Json.h"

#include "TestBundles.h"

#include <gtest/gtest.h>

#include <random>

using namespace tessel;
using Type = JsonValue::Type;

static JsonValue parseOk(std::string_view text) {
  Result<JsonValue> r = parseJson(text, "t.json");
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? *r : JsonValue();
}

static std::string parseError(std::string_view text) {
  Result<JsonValue> r = parseJson(text, "t.json");
  EXPECT_FALSE(r.ok()) << "parsed: " << text;
  return r.ok() ? "" : r.message();
}

TEST(Json, Literals) {
  EXPECT_EQ(parseOk("null").type, Type::Null);
  EXPECT_TRUE(parseOk("true").boolean);
  JsonValue f = parseOk(" false ");
  EXPECT_EQ(f.type, Type::Bool);
  EXPECT_FALSE(f.boolean);
}

TEST(Json, Numbers) {
  EXPECT_EQ(parseOk("0").integer, 0);
  EXPECT_EQ(parseOk("-12").integer, -12);
  EXPECT_EQ(parseOk("9223372036854775807").integer, INT64_MAX);
  EXPECT_EQ(parseOk("-9223372036854775808").integer, INT64_MIN);
  JsonValue big = parseOk("9223372036854775808");
  EXPECT_FALSE(big.integer);
  EXPECT_DOUBLE_EQ(big.number, 9223372036854775808.0);
  JsonValue real = parseOk("3.5");
  EXPECT_FALSE(real.integer);
  EXPECT_DOUBLE_EQ(real.number, 3.5);
  EXPECT_FALSE(parseOk("1e3").integer); // written as a real number
  EXPECT_DOUBLE_EQ(parseOk("1e3").number, 1000);
  EXPECT_DOUBLE_EQ(parseOk("-2.5E-1").number, -0.25);
}

TEST(Json, StringEscapes) {
  EXPECT_EQ(parseOk(R"("\"\\\/\b\f\n\r\t")").string, "\"\\/\b\f\n\r\t");
  EXPECT_EQ(parseOk(R"("caf\u00e9")").string, "caf\xc3\xa9");
  EXPECT_EQ(parseOk(R"("\u20AC")").string, "\xe2\x82\xac");
  EXPECT_EQ(parseOk(R"("\ud83d\ude00")").string, "\xf0\x9f\x98\x80");
  EXPECT_EQ(parseOk(R"("a\u0000b")").string, std::string("a\0b", 3));
  EXPECT_EQ(parseOk("\"raw \xc3\xa9 bytes\"").string, "raw \xc3\xa9 bytes");
}

TEST(Json, ObjectsKeepOrderAndOffsets) {
  std::string text = "{\"b\": [1, {\"c\": null}],\n \"a\": {}}";
  JsonValue v = parseOk(text);
  ASSERT_EQ(v.type, Type::Object);
  ASSERT_EQ(v.object.size(), 2u);
  EXPECT_EQ(v.object[0].first, "b");
  EXPECT_EQ(v.object[1].first, "a");
  const JsonValue *b = v.find("b");
  ASSERT_TRUE(b);
  ASSERT_EQ(b->array.size(), 2u);
  EXPECT_EQ(b->array[1].find("c")->type, Type::Null);
  EXPECT_EQ(v.find("missing"), nullptr);
  EXPECT_EQ(lineAndColumn(text, v.find("a")->offset), std::make_pair(2u, 7u));
  EXPECT_EQ(parseOk(" \t\r\n[ ]\n").array.size(), 0u);
}

TEST(Json, ErrorsHaveLineAndColumn) {
  const std::pair<const char *, const char *> cases[] = {
      {"", "t.json:1:1: error: expected a value, got end of input"},
      {"[1,]", "t.json:1:4: error: expected a value, got ']'"},
      {"{\"a\" 1}",
       "t.json:1:6: error: expected ':' after member name, got '1'"},
      {"{\"a\":1,}",
       "t.json:1:8: error: expected a member name in quotes, got '}'"},
      {"{1:2}", "t.json:1:2: error: expected a member name in quotes"},
      {"[1 2]", "t.json:1:4: error: expected ',' or ']' in array, got '2'"},
      {"{\"a\":1 \"b\":2}", "t.json:1:8: error: expected ',' or '}' in object"},
      {"\"abc", "t.json:1:1: error: unterminated string"},
      {"\"a\nb\"", "t.json:1:3: error: control character in string"},
      {"\"\\x\"", "t.json:1:2: error: invalid escape in string"},
      {"\"\\u12G4\"", "t.json:1:6: error: expected 4 hex digits after \\u"},
      {"\"\\udc00\"", "t.json:1:2: error: unpaired low surrogate"},
      {"\"\\ud800x\"", "t.json:1:2: error: unpaired high surrogate"},
      {"\"\\ud800\\u0041\"", "t.json:1:2: error: unpaired high surrogate"},
      {"01", "t.json:1:2: error: unexpected '1' after the document"},
      {"-", "t.json:1:2: error: expected a digit, got end of input"},
      {"1.", "t.json:1:3: error: expected a digit after '.'"},
      {".5", "t.json:1:1: error: expected a value, got '.'"},
      {"+1", "t.json:1:1: error: expected a value, got '+'"},
      {"1e", "t.json:1:3: error: expected a digit in the exponent"},
      {"1e999", "t.json:1:1: error: number out of range"},
      {"tru", "t.json:1:1: error: expected a value, got 't'"},
      {"NaN", "t.json:1:1: error: expected a value, got 'N'"},
      {"{\"a\":1,\"a\":2}", "t.json:1:8: error: duplicate member 'a'"},
      {"[1]\n  x", "t.json:2:3: error: unexpected 'x' after the document"},
      {"\x01", "t.json:1:1: error: expected a value, got byte 0x01"},
      {"[\xff]", "t.json:1:2: error: expected a value, got byte 0xff"},
  };
  for (const auto &[input, expected] : cases)
    EXPECT_EQ(parseError(input).rfind(expected, 0), 0u)
        << "input: " << input << "\nerror: " << parseError(input);
}

TEST(Json, NestingIsBounded) {
  std::string ok =
      std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  parseOk(ok);
  std::string deep = "[" + ok + "]";
  EXPECT_NE(parseError(deep).find("nesting deeper than 128"),
            std::string::npos);
  std::string objects;
  for (int i = 0; i < 100000; ++i)
    objects += "{\"a\":";
  EXPECT_NE(parseError(objects).find("nesting deeper"), std::string::npos);
}

// A fuzzer will do this at scale; here every prefix and some random damage
// of a real bundle must give a value or an error, never a crash or a hang.
TEST(Json, DamagedInputNeverCrashes) {
  std::string text = readInput("vector_add.bundle");
  ASSERT_FALSE(text.empty());
  parseOk(text);
  for (size_t n = 0; n < text.size(); n += 7)
    EXPECT_FALSE(parseJson(text.substr(0, n), "t.json").ok());
  std::mt19937 rng(1234);
  for (int round = 0; round < 2000; ++round) {
    std::string damaged = text;
    for (int i = 0; i < 1 + round % 4; ++i)
      damaged[rng() % damaged.size()] = char(rng() % 256);
    Result<JsonValue> r = parseJson(damaged, "t.json");
    if (!r.ok()) {
      EXPECT_EQ(r.message().rfind("t.json:", 0), 0u);
    }
  }
}

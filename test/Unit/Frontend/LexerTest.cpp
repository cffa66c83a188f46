//===- LexerTest.cpp - Token streams, indentation and lexer errors --------===//

#include "Frontend/Lexer.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace tessel;

namespace {
/// Lexes `src` and renders the tokens compactly: names as `id:x`, numbers as
/// `int:5`/`float:0.5`, strings as `str:v`, layout as NL/IN/DE/EOF, errors
/// as ERR, operators and keywords as spelled.
struct Lexed {
  std::string tokens;
  std::string errors;
  unsigned numErrors = 0;
};

std::string render(const Token &tok) {
  switch (tok.kind) {
  case TokenKind::Identifier:
    return "id:" + tok.text;
  case TokenKind::Int:
    return "int:" + std::to_string(tok.intValue);
  case TokenKind::Float: {
    std::ostringstream os;
    os << "float:" << tok.floatValue;
    return os.str();
  }
  case TokenKind::String:
    return "str:" + tok.text;
  case TokenKind::Newline:
    return "NL";
  case TokenKind::Indent:
    return "IN";
  case TokenKind::Dedent:
    return "DE";
  case TokenKind::Eof:
    return "EOF";
  case TokenKind::Error:
    return "ERR";
  default:
    return getTokenKindName(tok.kind);
  }
}

Lexed lex(const std::string &src) {
  SourceManager sm("t.tsl", src);
  std::ostringstream os;
  DiagnosticEngine diag(sm, os);
  Lexer lexer(sm, diag);
  Lexed result;
  for (const Token &tok : lexer.lexAll())
    result.tokens += (result.tokens.empty() ? "" : " ") + render(tok);
  result.errors = os.str();
  result.numErrors = diag.getNumErrors();
  return result;
}

std::string tokensOf(const std::string &src) {
  Lexed lexed = lex(src);
  EXPECT_EQ(lexed.errors, "") << "for source: " << src;
  return lexed.tokens;
}

/// The first line of the diagnostics: "t.tsl:L:C: error: ...".
std::string firstError(const std::string &src) {
  Lexed lexed = lex(src);
  return lexed.errors.substr(0, lexed.errors.find('\n'));
}
} // namespace

TEST(LexerTest, Empty) {
  EXPECT_EQ(tokensOf(""), "EOF");
  EXPECT_EQ(tokensOf("\n\n   \n# only a comment\n"), "EOF");
}

TEST(LexerTest, SimpleFunction) {
  EXPECT_EQ(tokensOf("def f(x):\n    return x\n"),
            "def id:f ( id:x ) : NL IN return id:x NL DE EOF");
}

TEST(LexerTest, KeywordsAndNames) {
  EXPECT_EQ(tokensOf("def return if elif else for in pass and or not True "
                     "False None while _x1 x_2"),
            "def return if elif else for in pass and or not True False None "
            "id:while id:_x1 id:x_2 NL EOF");
}

TEST(LexerTest, Operators) {
  EXPECT_EQ(tokensOf("+ - * / // % ** & | ^ ~ < <= > >= == != = += -= *= /= "
                     "//= %= **= &= |= ^= , : ; . @ -> << >>"),
            "+ - * / // % ** & | ^ ~ < <= > >= == != = += -= *= /= //= %= "
            "**= &= |= ^= , : ; . @ -> << >> NL EOF");
  EXPECT_EQ(tokensOf("a**-b//c"), "id:a ** - id:b // id:c NL EOF");
  EXPECT_EQ(tokensOf("t[:, None]"), "id:t [ : , None ] NL EOF");
}

TEST(LexerTest, IntegerLiterals) {
  EXPECT_EQ(tokensOf("0 7 1024 1_000_000 0x1F 0XfF 0x_ff 0o17 0b101 00"),
            "int:0 int:7 int:1024 int:1000000 int:31 int:255 int:255 int:15 "
            "int:5 int:0 NL EOF");
  EXPECT_EQ(tokensOf("9223372036854775807"), "int:9223372036854775807 NL EOF");
}

TEST(LexerTest, FloatLiterals) {
  EXPECT_EQ(tokensOf("1.0 1e-3 .5 1. 2.5E+2 1_0.2_5 3e2"),
            "float:1 float:0.001 float:0.5 float:1 float:250 float:10.25 "
            "float:300 NL EOF");
}

TEST(LexerTest, Strings) {
  EXPECT_EQ(tokensOf("float(\"inf\") float('-inf') 'a\\'b' \"x\\ny\""),
            "id:float ( str:inf ) id:float ( str:-inf ) str:a'b str:x\ny NL "
            "EOF");
  // Triple-quoted strings may span lines (docstrings).
  EXPECT_EQ(tokensOf("def f():\n    \"\"\"doc\n    more\"\"\"\n    pass\n"),
            "def id:f ( ) : NL IN str:doc\n    more NL pass NL DE EOF");
}

TEST(LexerTest, IndentDedent) {
  const char *src = "def f():\n"
                    "    if a:\n"
                    "        x = 1\n"
                    "\n"
                    "          # comment at odd indentation\n"
                    "    y = 2\n"
                    "def g():\n"
                    "    pass";
  EXPECT_EQ(tokensOf(src),
            "def id:f ( ) : NL IN if id:a : NL IN id:x = int:1 NL DE id:y = "
            "int:2 NL DE def id:g ( ) : NL IN pass NL DE EOF");
}

TEST(LexerTest, DedentSeveralLevelsAtOnce) {
  EXPECT_EQ(tokensOf("a:\n  b:\n    c\nd\n"),
            "id:a : NL IN id:b : NL IN id:c NL DE DE id:d NL EOF");
}

TEST(LexerTest, ImplicitLineJoining) {
  EXPECT_EQ(tokensOf("x = f(a,\n      b)[1,\n  2]\ny\n"),
            "id:x = id:f ( id:a , id:b ) [ int:1 , int:2 ] NL id:y NL EOF");
  // Indentation inside brackets does not count.
  EXPECT_EQ(tokensOf("def f():\n    x = (1 +\n2)\n    y\n"),
            "def id:f ( ) : NL IN id:x = ( int:1 + int:2 ) NL id:y NL DE EOF");
}

TEST(LexerTest, ExplicitLineJoining) {
  EXPECT_EQ(tokensOf("x = 1 + \\\n    2\n"), "id:x = int:1 + int:2 NL EOF");
}

TEST(LexerTest, CommentsAndCrlf) {
  EXPECT_EQ(tokensOf("x = 1  # trailing\r\ny\r\n"),
            "id:x = int:1 NL id:y NL EOF");
}

TEST(LexerTest, Locations) {
  SourceManager sm("t.tsl", "def f():\n    x = a+1\n");
  std::ostringstream os;
  DiagnosticEngine diag(sm, os);
  std::vector<Token> toks = Lexer(sm, diag).lexAll();
  ASSERT_EQ(toks.size(), 15u);
  EXPECT_EQ(toks[0].loc, (SourceLoc{1, 1}));   // def
  EXPECT_EQ(toks[1].loc, (SourceLoc{1, 5}));   // f
  EXPECT_EQ(toks[5].loc, (SourceLoc{1, 9}));   // NEWLINE at the line end
  EXPECT_EQ(toks[6].loc, (SourceLoc{2, 5}));   // INDENT
  EXPECT_EQ(toks[7].loc, (SourceLoc{2, 5}));   // x
  EXPECT_EQ(toks[10].loc, (SourceLoc{2, 10})); // +
  EXPECT_EQ(toks[11].loc, (SourceLoc{2, 11})); // 1
}

TEST(LexerTest, TabInIndentation) {
  Lexed lexed = lex("def f():\n\tx = 1\n");
  EXPECT_EQ(lexed.numErrors, 1u);
  EXPECT_EQ(lexed.errors, "t.tsl:2:1: error: tab character in indentation; "
                          "indent with spaces\n\tx = 1\n^\n");
  // The line is still lexed (as indented) so parsing can go on.
  EXPECT_EQ(lexed.tokens, "def id:f ( ) : NL IN id:x = int:1 NL DE EOF");
  // A tab after the indentation is plain whitespace.
  EXPECT_EQ(tokensOf("x =\t1\n"), "id:x = int:1 NL EOF");
}

TEST(LexerTest, InconsistentDedent) {
  EXPECT_EQ(firstError("if a:\n    b\n  c\n"),
            "t.tsl:3:3: error: unindent does not match any outer indentation "
            "level");
}

TEST(LexerTest, UnterminatedString) {
  Lexed lexed = lex("x = \"abc\ny = 'q");
  EXPECT_EQ(lexed.numErrors, 2u);
  EXPECT_EQ(lexed.errors.substr(0, lexed.errors.find('\n')),
            "t.tsl:1:5: error: unterminated string literal");
  EXPECT_NE(lexed.errors.find("t.tsl:2:5: error: unterminated string literal"),
            std::string::npos);
  EXPECT_EQ(lexed.tokens, "id:x = ERR NL id:y = ERR NL EOF");
  EXPECT_EQ(firstError("'''abc\n"),
            "t.tsl:1:1: error: unterminated triple-quoted string");
}

TEST(LexerTest, UnterminatedBracketAtEof) {
  Lexed lexed = lex("x = f(a, [b\n");
  EXPECT_EQ(lexed.errors.substr(0, lexed.errors.find('\n')),
            "t.tsl:1:10: error: '[' was never closed");
  EXPECT_EQ(lexed.tokens, "id:x = id:f ( id:a , [ id:b ERR NL EOF");
}

TEST(LexerTest, UnclosedBracketBeforeDef) {
  // A `def` inside brackets ends the broken line so the next function lexes
  // normally.
  Lexed lexed = lex("x = f(a,\ndef g():\n    pass\n");
  EXPECT_EQ(lexed.numErrors, 1u);
  EXPECT_EQ(lexed.errors.substr(0, lexed.errors.find('\n')),
            "t.tsl:1:6: error: '(' was never closed");
  EXPECT_EQ(lexed.tokens,
            "id:x = id:f ( id:a , ERR NL def id:g ( ) : NL IN pass NL DE EOF");
}

TEST(LexerTest, MismatchedClosingBracket) {
  EXPECT_EQ(firstError("f(a]\n"),
            "t.tsl:1:4: error: closing ']' does not match '('");
}

TEST(LexerTest, UnknownCharacters) {
  EXPECT_EQ(firstError("x = a $ b"), "t.tsl:1:7: error: invalid character '$'");
  EXPECT_EQ(firstError("x = \xCE\xBB"),
            "t.tsl:1:5: error: invalid character U+03BB");
  EXPECT_EQ(firstError("x = \xFF"), "t.tsl:1:5: error: invalid byte 0xFF");
  EXPECT_EQ(firstError(std::string("x\0", 2)),
            "t.tsl:1:2: error: invalid control character 0x00");
  Lexed lexed = lex("a ? b ! c");
  EXPECT_EQ(lexed.numErrors, 2u);
  EXPECT_EQ(lexed.tokens, "id:a ERR id:b ERR id:c NL EOF");
}

TEST(LexerTest, BadNumbers) {
  EXPECT_EQ(firstError("1abc"),
            "t.tsl:1:1: error: invalid number literal '1abc'");
  EXPECT_EQ(firstError("x = 0x"),
            "t.tsl:1:5: error: invalid number literal '0x'");
  EXPECT_EQ(firstError("0b102"),
            "t.tsl:1:1: error: invalid number literal '0b102'");
  EXPECT_EQ(firstError("1__0"),
            "t.tsl:1:1: error: invalid number literal '1__0'");
  EXPECT_EQ(firstError("1_"), "t.tsl:1:1: error: invalid number literal '1_'");
  EXPECT_EQ(firstError("1_e5"),
            "t.tsl:1:1: error: invalid number literal '1_e5'");
  EXPECT_EQ(firstError("1e"), "t.tsl:1:1: error: invalid number literal '1e'");
  EXPECT_EQ(firstError("1.5.2"),
            "t.tsl:1:1: error: invalid number literal '1.5.2'");
  EXPECT_EQ(firstError("012"), "t.tsl:1:1: error: leading zeros in decimal "
                               "integer literals are not permitted; use 0o "
                               "for octal");
  EXPECT_EQ(firstError("9223372036854775808"),
            "t.tsl:1:1: error: integer literal '9223372036854775808' is too "
            "large");
  EXPECT_EQ(firstError("0x1_0000_0000_0000_0000"),
            "t.tsl:1:1: error: integer literal '0x1_0000_0000_0000_0000' is "
            "too large");
  Lexed lexed = lex("x = 1abc + 2");
  EXPECT_EQ(lexed.numErrors, 1u);
  EXPECT_EQ(lexed.tokens, "id:x = ERR + int:2 NL EOF");
}

TEST(LexerTest, EofIsSticky) {
  SourceManager sm("t.tsl", "x");
  std::ostringstream os;
  DiagnosticEngine diag(sm, os);
  Lexer lexer(sm, diag);
  lexer.lexAll();
  EXPECT_TRUE(lexer.lex().is(TokenKind::Eof));
  EXPECT_TRUE(lexer.lex().is(TokenKind::Eof));
}

TEST(LexerTest, GarbageTerminates) {
  std::string garbage;
  for (int i = 0; i < 4096; ++i)
    garbage.push_back(static_cast<char>((i * 7919 + 13) % 256));
  Lexed lexed = lex(garbage);
  EXPECT_GT(lexed.numErrors, 0u);
  EXPECT_EQ(lexed.tokens.substr(lexed.tokens.size() - 3), "EOF");
}

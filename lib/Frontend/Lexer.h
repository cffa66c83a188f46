//===- Lexer.h - Tokens of the Tessel DSL -----------------------*- C++ -*-===//
//
// A Python-style tokenizer: indentation becomes INDENT/DEDENT tokens, line
// ends become NEWLINE tokens except inside () and [] (implicit joining).
// Errors are reported through the DiagnosticEngine and produce an Error
// token, which the parser skips silently (the lexer already explained it).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_FRONTEND_LEXER_H
#define TESSEL_FRONTEND_LEXER_H

#include "Frontend/Diagnostics.h"

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace tessel {

enum class TokenKind {
  Eof,
  Newline,
  Indent,
  Dedent,
  Error,

  Identifier,
  Int,
  Float,
  String,

  // Keywords.
  KwDef,
  KwReturn,
  KwIf,
  KwElif,
  KwElse,
  KwFor,
  KwIn,
  KwPass,
  KwAnd,
  KwOr,
  KwNot,
  KwTrue,
  KwFalse,
  KwNone,

  // Operators and punctuation.
  Plus,            // +
  Minus,           // -
  Star,            // *
  Slash,           // /
  SlashSlash,      // //
  Percent,         // %
  StarStar,        // **
  Amp,             // &
  Pipe,            // |
  Caret,           // ^
  Tilde,           // ~
  LessLess,        // <<
  GreaterGreater,  // >>
  Less,            // <
  LessEqual,       // <=
  Greater,         // >
  GreaterEqual,    // >=
  EqualEqual,      // ==
  NotEqual,        // !=
  Equal,           // =
  PlusEqual,       // +=
  MinusEqual,      // -=
  StarEqual,       // *=
  SlashEqual,      // /=
  SlashSlashEqual, // //=
  PercentEqual,    // %=
  StarStarEqual,   // **=
  AmpEqual,        // &=
  PipeEqual,       // |=
  CaretEqual,      // ^=
  LShiftEqual,     // <<=
  RShiftEqual,     // >>=
  LParen,          // (
  RParen,          // )
  LBracket,        // [
  RBracket,        // ]
  Comma,           // ,
  Colon,           // :
  Semicolon,       // ;
  Dot,             // .
  At,              // @
  Arrow,           // ->
};

/// The fixed spelling of a keyword or operator ("def", "+="), or a short
/// description of the other kinds ("identifier", "end of line").
const char *getTokenKindName(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::Eof;
  SourceLoc loc;
  /// Identifier name, literal spelling as written, or the decoded value of a
  /// string literal.
  std::string text;
  int64_t intValue = 0;
  double floatValue = 0.0;
  /// Lexed inside () or []: a syntax error here may really be a bracket
  /// that is never closed.
  bool inBrackets = false;

  bool is(TokenKind k) const { return kind == k; }
  /// How to name this token in an error message: "'+'", "identifier 'x'".
  std::string describe() const;
};

class Lexer {
public:
  Lexer(const SourceManager &sm, DiagnosticEngine &diag);

  /// Returns the next token; after Eof keeps returning Eof.
  Token lex();
  /// Lexes the whole buffer, Eof included.
  std::vector<Token> lexAll();

  /// How many "'(' was never closed" errors were reported so far.
  unsigned getNumUnclosedBrackets() const { return numUnclosed; }

private:
  struct OpenBracket {
    char c;
    SourceLoc loc;
  };

  bool atEnd() const { return pos >= buffer.size(); }
  char peekChar(size_t ahead = 0) const {
    return pos + ahead < buffer.size() ? buffer[pos + ahead] : '\0';
  }
  SourceLoc locAt(size_t offset) const;
  SourceLoc currentLoc() const { return locAt(pos); }
  void consumeNewline();
  Token makeToken(TokenKind kind, SourceLoc loc, std::string text = {});

  void lexLineStart();
  void checkUnclosedBeforeDef();
  void reportUnclosed();
  void skipTrivia();
  void finish();
  Token lexIdentifier();
  Token lexNumber();
  Token lexPrefixedInt(SourceLoc loc, size_t start);
  Token invalidNumber(SourceLoc loc, size_t start);
  Token makeFloat(SourceLoc loc, const std::string &text);
  Token makeDecimalInt(SourceLoc loc, const std::string &text);
  Token lexString();
  void lexEscape(std::string &value);
  Token lexOperator();
  Token lexUnknown();
  Token errorToken(SourceLoc loc, std::string_view message);

  DiagnosticEngine &diag;
  std::string_view buffer;
  /// The buffer's number in `diag` (SourceLoc::file).
  unsigned file;
  size_t pos = 0;
  unsigned line = 1;
  size_t lineStart = 0;
  bool atLineStart = true;
  bool lineHasTokens = false;
  bool finished = false;
  unsigned numUnclosed = 0;
  std::vector<unsigned> indentStack{0};
  std::vector<OpenBracket> brackets;
  std::deque<Token> pending;
};

} // namespace tessel

#endif // TESSEL_FRONTEND_LEXER_H

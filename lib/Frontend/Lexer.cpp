//===- Lexer.cpp - Tokens of the Tessel DSL -------------------------------===//

#include "Frontend/Lexer.h"

#include <cstdio>
#include <cstdlib>
#include <limits>

using namespace tessel;

// ASCII-only classification: <cctype> depends on the locale and is undefined
// for negative chars, and identifiers are ASCII in the DSL.
static bool isDigit(char c) { return c >= '0' && c <= '9'; }
static bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

const char *tessel::getTokenKindName(TokenKind kind) {
  switch (kind) {
  // clang-format off
  case TokenKind::Eof: return "end of file";
  case TokenKind::Newline: return "end of line";
  case TokenKind::Indent: return "indent";
  case TokenKind::Dedent: return "dedent";
  case TokenKind::Error: return "invalid token";
  case TokenKind::Identifier: return "identifier";
  case TokenKind::Int: return "integer literal";
  case TokenKind::Float: return "float literal";
  case TokenKind::String: return "string literal";
  case TokenKind::KwDef: return "def";
  case TokenKind::KwReturn: return "return";
  case TokenKind::KwIf: return "if";
  case TokenKind::KwElif: return "elif";
  case TokenKind::KwElse: return "else";
  case TokenKind::KwFor: return "for";
  case TokenKind::KwIn: return "in";
  case TokenKind::KwPass: return "pass";
  case TokenKind::KwAnd: return "and";
  case TokenKind::KwOr: return "or";
  case TokenKind::KwNot: return "not";
  case TokenKind::KwTrue: return "True";
  case TokenKind::KwFalse: return "False";
  case TokenKind::KwNone: return "None";
  case TokenKind::Plus: return "+";
  case TokenKind::Minus: return "-";
  case TokenKind::Star: return "*";
  case TokenKind::Slash: return "/";
  case TokenKind::SlashSlash: return "//";
  case TokenKind::Percent: return "%";
  case TokenKind::StarStar: return "**";
  case TokenKind::Amp: return "&";
  case TokenKind::Pipe: return "|";
  case TokenKind::Caret: return "^";
  case TokenKind::Tilde: return "~";
  case TokenKind::LessLess: return "<<";
  case TokenKind::GreaterGreater: return ">>";
  case TokenKind::Less: return "<";
  case TokenKind::LessEqual: return "<=";
  case TokenKind::Greater: return ">";
  case TokenKind::GreaterEqual: return ">=";
  case TokenKind::EqualEqual: return "==";
  case TokenKind::NotEqual: return "!=";
  case TokenKind::Equal: return "=";
  case TokenKind::PlusEqual: return "+=";
  case TokenKind::MinusEqual: return "-=";
  case TokenKind::StarEqual: return "*=";
  case TokenKind::SlashEqual: return "/=";
  case TokenKind::SlashSlashEqual: return "//=";
  case TokenKind::PercentEqual: return "%=";
  case TokenKind::StarStarEqual: return "**=";
  case TokenKind::AmpEqual: return "&=";
  case TokenKind::PipeEqual: return "|=";
  case TokenKind::CaretEqual: return "^=";
  case TokenKind::LShiftEqual: return "<<=";
  case TokenKind::RShiftEqual: return ">>=";
  case TokenKind::LParen: return "(";
  case TokenKind::RParen: return ")";
  case TokenKind::LBracket: return "[";
  case TokenKind::RBracket: return "]";
  case TokenKind::Comma: return ",";
  case TokenKind::Colon: return ":";
  case TokenKind::Semicolon: return ";";
  case TokenKind::Dot: return ".";
  case TokenKind::At: return "@";
  case TokenKind::Arrow: return "->";
    // clang-format on
  }
  return "token";
}

std::string Token::describe() const {
  switch (kind) {
  case TokenKind::Identifier:
    return "identifier '" + text + "'";
  case TokenKind::Int:
  case TokenKind::Float:
    return "number '" + text + "'";
  case TokenKind::Eof:
  case TokenKind::Newline:
  case TokenKind::Indent:
  case TokenKind::Dedent:
  case TokenKind::Error:
  case TokenKind::String:
    return getTokenKindName(kind);
  default:
    return std::string("'") + getTokenKindName(kind) + "'";
  }
}

Lexer::Lexer(const SourceManager &sm, DiagnosticEngine &diag)
    : diag(diag), buffer(sm.getBuffer()), file(diag.getFileId(sm)) {}

SourceLoc Lexer::locAt(size_t offset) const {
  return {line, static_cast<unsigned>(offset - lineStart + 1), file};
}

void Lexer::consumeNewline() {
  ++pos;
  ++line;
  lineStart = pos;
}

Token Lexer::makeToken(TokenKind kind, SourceLoc loc, std::string text) {
  Token tok;
  tok.kind = kind;
  tok.loc = loc;
  tok.text = std::move(text);
  tok.inBrackets = !brackets.empty();
  return tok;
}

Token Lexer::errorToken(SourceLoc loc, std::string_view message) {
  diag.error(loc, message);
  return makeToken(TokenKind::Error, loc);
}

std::vector<Token> Lexer::lexAll() {
  std::vector<Token> tokens;
  do
    tokens.push_back(lex());
  while (!tokens.back().is(TokenKind::Eof));
  return tokens;
}

Token Lexer::lex() {
  while (true) {
    if (!pending.empty()) {
      Token tok = std::move(pending.front());
      pending.pop_front();
      return tok;
    }
    if (finished)
      return makeToken(TokenKind::Eof, currentLoc());
    if (atLineStart) {
      lexLineStart();
      continue;
    }
    skipTrivia();
    if (atEnd()) {
      finish();
      continue;
    }
    char c = peekChar();
    if (c == '\n') {
      SourceLoc loc = currentLoc();
      consumeNewline();
      if (!brackets.empty()) {
        checkUnclosedBeforeDef();
        continue;
      }
      atLineStart = true;
      if (lineHasTokens) {
        lineHasTokens = false;
        return makeToken(TokenKind::Newline, loc);
      }
      continue;
    }
    Token tok;
    if (isIdentStart(c))
      tok = lexIdentifier();
    else if (isDigit(c) || (c == '.' && isDigit(peekChar(1))))
      tok = lexNumber();
    else if (c == '"' || c == '\'')
      tok = lexString();
    else
      tok = lexOperator();
    lineHasTokens = true;
    return tok;
  }
}

/// Measures the indentation of the next non-blank line and queues the
/// INDENT/DEDENT tokens it implies. Blank and comment-only lines are skipped.
void Lexer::lexLineStart() {
  unsigned width = 0;
  SourceLoc tabLoc;
  while (true) {
    width = 0;
    tabLoc = SourceLoc();
    for (; !atEnd(); ++pos) {
      char c = peekChar();
      if (c == ' ') {
        ++width;
      } else if (c == '\t') {
        if (!tabLoc.isValid())
          tabLoc = currentLoc();
        width = (width / 8 + 1) * 8;
      } else if (c == '\f') {
        width = 0; // As in Python: a form feed resets the count.
      } else if (c != '\r') {
        break;
      }
    }
    if (!atEnd() && peekChar() == '#')
      while (!atEnd() && peekChar() != '\n')
        ++pos;
    if (atEnd() || peekChar() != '\n')
      break;
    consumeNewline();
  }
  atLineStart = false;
  if (atEnd())
    return; // finish() emits the closing DEDENTs.
  if (tabLoc.isValid())
    diag.error(tabLoc, "tab character in indentation; indent with spaces");

  SourceLoc loc = currentLoc();
  if (width > indentStack.back()) {
    indentStack.push_back(width);
    pending.push_back(makeToken(TokenKind::Indent, loc));
    return;
  }
  while (width < indentStack.back()) {
    indentStack.pop_back();
    pending.push_back(makeToken(TokenKind::Dedent, loc));
  }
  // Recover by treating the line as being at the enclosing level.
  if (width != indentStack.back())
    diag.error(loc, "unindent does not match any outer indentation level");
}

/// Inside brackets a line starting with `def` or a decorator can only mean a
/// bracket was left open; closing the logical line here keeps one missing ')'
/// from swallowing the rest of the file.
void Lexer::checkUnclosedBeforeDef() {
  size_t p = pos;
  while (p < buffer.size() && (buffer[p] == ' ' || buffer[p] == '\t'))
    ++p;
  std::string_view rest = buffer.substr(p);
  bool isDef =
      rest.substr(0, 3) == "def" && (rest.size() == 3 || !isIdentChar(rest[3]));
  bool isDecorator = rest.size() > 1 && rest[0] == '@' && isIdentStart(rest[1]);
  if (!isDef && !isDecorator)
    return;
  reportUnclosed();
  pending.push_back(makeToken(TokenKind::Newline, currentLoc()));
  lineHasTokens = false;
  atLineStart = true;
}

/// Reports the innermost open bracket and queues an Error token that ends
/// the broken expression silently.
void Lexer::reportUnclosed() {
  const OpenBracket &open = brackets.back();
  diag.error(open.loc, std::string("'") + open.c + "' was never closed");
  ++numUnclosed;
  brackets.clear();
  pending.push_back(makeToken(TokenKind::Error, currentLoc()));
}

void Lexer::skipTrivia() {
  while (!atEnd()) {
    char c = peekChar();
    if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
      ++pos;
    } else if (c == '#') {
      while (!atEnd() && peekChar() != '\n')
        ++pos;
    } else if (c == '\\' && peekChar(1) == '\n') {
      ++pos; // Explicit line joining.
      consumeNewline();
    } else if (c == '\\' && peekChar(1) == '\r' && peekChar(2) == '\n') {
      pos += 2;
      consumeNewline();
    } else {
      return;
    }
  }
}

/// End of input: close the open brackets, the last logical line and every
/// indented block.
void Lexer::finish() {
  SourceLoc loc = currentLoc();
  if (!brackets.empty()) {
    reportUnclosed();
    lineHasTokens = true;
  }
  if (lineHasTokens)
    pending.push_back(makeToken(TokenKind::Newline, loc));
  lineHasTokens = false;
  while (indentStack.size() > 1) {
    indentStack.pop_back();
    pending.push_back(makeToken(TokenKind::Dedent, loc));
  }
  finished = true;
}

Token Lexer::lexIdentifier() {
  static const struct {
    const char *name;
    TokenKind kind;
  } keywords[] = {
      {"def", TokenKind::KwDef},     {"return", TokenKind::KwReturn},
      {"if", TokenKind::KwIf},       {"elif", TokenKind::KwElif},
      {"else", TokenKind::KwElse},   {"for", TokenKind::KwFor},
      {"in", TokenKind::KwIn},       {"pass", TokenKind::KwPass},
      {"and", TokenKind::KwAnd},     {"or", TokenKind::KwOr},
      {"not", TokenKind::KwNot},     {"True", TokenKind::KwTrue},
      {"False", TokenKind::KwFalse}, {"None", TokenKind::KwNone},
  };
  SourceLoc loc = currentLoc();
  size_t start = pos;
  while (!atEnd() && isIdentChar(peekChar()))
    ++pos;
  std::string_view name = buffer.substr(start, pos - start);
  for (const auto &kw : keywords)
    if (name == kw.name)
      return makeToken(kw.kind, loc, std::string(name));
  return makeToken(TokenKind::Identifier, loc, std::string(name));
}

static int digitValue(char c) {
  if (isDigit(c))
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// Accumulates `digits` in `base`, skipping underscores. Returns false if the
/// value does not fit in int64 (a digit must already be valid for `base`).
static bool accumulate(std::string_view digits, unsigned base, int64_t &value) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  value = 0;
  for (char c : digits) {
    if (c == '_')
      continue;
    int64_t d = digitValue(c);
    if (value > (max - d) / static_cast<int64_t>(base))
      return false;
    value = value * base + d;
  }
  return true;
}

/// Python's rule: an underscore must sit between two digits (the base prefix
/// counts as a digit, as in 0x_ff).
static bool underscoresOk(std::string_view spelling, size_t prefixLen,
                          bool hex) {
  auto isDigitHere = [&](char c) {
    return hex ? digitValue(c) >= 0 : isDigit(c);
  };
  for (size_t i = prefixLen; i < spelling.size(); ++i) {
    if (spelling[i] != '_')
      continue;
    bool before =
        i == prefixLen ? prefixLen != 0 : isDigitHere(spelling[i - 1]);
    bool after = i + 1 < spelling.size() && isDigitHere(spelling[i + 1]);
    if (!before || !after)
      return false;
  }
  return true;
}

/// Swallows the rest of the word so that one typo gives one error.
Token Lexer::invalidNumber(SourceLoc loc, size_t start) {
  while (!atEnd() && (isIdentChar(peekChar()) || peekChar() == '.'))
    ++pos;
  return errorToken(loc, "invalid number literal '" +
                             std::string(buffer.substr(start, pos - start)) +
                             "'");
}

/// 0x..., 0o... or 0b...
Token Lexer::lexPrefixedInt(SourceLoc loc, size_t start) {
  char prefix = peekChar(1) | 0x20; // Lower case.
  unsigned base = prefix == 'x' ? 16 : prefix == 'o' ? 8 : 2;
  pos += 2;
  size_t digitsStart = pos;
  while (!atEnd() && isIdentChar(peekChar()))
    ++pos;
  std::string_view digits = buffer.substr(digitsStart, pos - digitsStart);
  std::string spelling(buffer.substr(start, pos - start));
  bool ok = !digits.empty() && underscoresOk(spelling, 2, base == 16);
  for (char c : digits)
    ok &= c == '_' ||
          (digitValue(c) >= 0 && digitValue(c) < static_cast<int>(base));
  if (!ok || peekChar() == '.')
    return invalidNumber(loc, start);
  Token tok = makeToken(TokenKind::Int, loc, spelling);
  if (!accumulate(digits, base, tok.intValue))
    return errorToken(loc, "integer literal '" + spelling + "' is too large");
  return tok;
}

Token Lexer::lexNumber() {
  SourceLoc loc = currentLoc();
  size_t start = pos;
  char prefix = peekChar(1) | 0x20;
  if (peekChar() == '0' && (prefix == 'x' || prefix == 'o' || prefix == 'b'))
    return lexPrefixedInt(loc, start);

  auto scanDigits = [&] {
    while (!atEnd() && (isDigit(peekChar()) || peekChar() == '_'))
      ++pos;
  };
  scanDigits();
  bool isFloat = false;
  if (peekChar() == '.') {
    isFloat = true;
    ++pos;
    scanDigits();
  }
  char e = peekChar(), sign = peekChar(1);
  if ((e == 'e' || e == 'E') &&
      (isDigit(sign) ||
       ((sign == '+' || sign == '-') && isDigit(peekChar(2))))) {
    isFloat = true;
    pos += isDigit(sign) ? 1 : 2;
    scanDigits();
  }
  // A literal running into a name ("1abc", "1.x", "1e") is one bad token.
  if (!atEnd() && (isIdentChar(peekChar()) || (isFloat && peekChar() == '.')))
    return invalidNumber(loc, start);
  std::string text(buffer.substr(start, pos - start));
  if (!underscoresOk(text, 0, false))
    return invalidNumber(loc, start);
  return isFloat ? makeFloat(loc, text) : makeDecimalInt(loc, text);
}

Token Lexer::makeFloat(SourceLoc loc, const std::string &text) {
  std::string cleaned;
  for (char c : text)
    if (c != '_')
      cleaned.push_back(c);
  Token tok = makeToken(TokenKind::Float, loc, text);
  // Out-of-range literals become inf or 0, as in Python.
  tok.floatValue = std::strtod(cleaned.c_str(), nullptr);
  return tok;
}

Token Lexer::makeDecimalInt(SourceLoc loc, const std::string &text) {
  if (text.size() > 1 && text[0] == '0' &&
      text.find_first_not_of("0_") != std::string::npos)
    return errorToken(loc, "leading zeros in decimal integer literals are not "
                           "permitted; use 0o for octal");
  Token tok = makeToken(TokenKind::Int, loc, text);
  if (!accumulate(text, 10, tok.intValue))
    return errorToken(loc, "integer literal '" + text + "' is too large");
  return tok;
}

Token Lexer::lexString() {
  SourceLoc loc = currentLoc();
  char quote = peekChar();
  bool triple = peekChar(1) == quote && peekChar(2) == quote;
  pos += triple ? 3 : 1;
  std::string value;
  while (true) {
    if (atEnd())
      return errorToken(loc, triple ? "unterminated triple-quoted string"
                                    : "unterminated string literal");
    char c = peekChar();
    if (c == quote &&
        (!triple || (peekChar(1) == quote && peekChar(2) == quote))) {
      pos += triple ? 3 : 1;
      return makeToken(TokenKind::String, loc, std::move(value));
    }
    if (c == '\n') {
      // The rest of the line is left to be lexed; the parser skips it.
      if (!triple)
        return errorToken(loc, "unterminated string literal");
      value.push_back(c);
      consumeNewline();
    } else if (c == '\\' && pos + 1 < buffer.size()) {
      lexEscape(value);
    } else {
      value.push_back(c);
      ++pos;
    }
  }
}

/// Decodes the escape sequence at pos (a backslash and one more byte).
void Lexer::lexEscape(std::string &value) {
  char esc = peekChar(1);
  ++pos;
  if (esc == '\n') {
    consumeNewline(); // Line continuation inside a string.
    return;
  }
  ++pos;
  switch (esc) {
  case 'n':
    value.push_back('\n');
    return;
  case 't':
    value.push_back('\t');
    return;
  case 'r':
    value.push_back('\r');
    return;
  case '0':
    value.push_back('\0');
    return;
  case '\\':
  case '\'':
  case '"':
    value.push_back(esc);
    return;
  default:
    // Python keeps unknown escapes verbatim.
    value.push_back('\\');
    value.push_back(esc);
    return;
  }
}

Token Lexer::lexOperator() {
  struct Op {
    std::string_view spelling;
    TokenKind kind;
  };
  // Longest spellings first so that "**=" is not read as "*" "*=".
  static const Op ops[] = {
      {"//=", TokenKind::SlashSlashEqual},
      {"**=", TokenKind::StarStarEqual},
      {"<<=", TokenKind::LShiftEqual},
      {">>=", TokenKind::RShiftEqual},
      {"**", TokenKind::StarStar},
      {"//", TokenKind::SlashSlash},
      {"<<", TokenKind::LessLess},
      {">>", TokenKind::GreaterGreater},
      {"<=", TokenKind::LessEqual},
      {">=", TokenKind::GreaterEqual},
      {"==", TokenKind::EqualEqual},
      {"!=", TokenKind::NotEqual},
      {"->", TokenKind::Arrow},
      {"+=", TokenKind::PlusEqual},
      {"-=", TokenKind::MinusEqual},
      {"*=", TokenKind::StarEqual},
      {"/=", TokenKind::SlashEqual},
      {"%=", TokenKind::PercentEqual},
      {"&=", TokenKind::AmpEqual},
      {"|=", TokenKind::PipeEqual},
      {"^=", TokenKind::CaretEqual},
      {"+", TokenKind::Plus},
      {"-", TokenKind::Minus},
      {"*", TokenKind::Star},
      {"/", TokenKind::Slash},
      {"%", TokenKind::Percent},
      {"&", TokenKind::Amp},
      {"|", TokenKind::Pipe},
      {"^", TokenKind::Caret},
      {"~", TokenKind::Tilde},
      {"<", TokenKind::Less},
      {">", TokenKind::Greater},
      {"=", TokenKind::Equal},
      {"(", TokenKind::LParen},
      {")", TokenKind::RParen},
      {"[", TokenKind::LBracket},
      {"]", TokenKind::RBracket},
      {",", TokenKind::Comma},
      {":", TokenKind::Colon},
      {";", TokenKind::Semicolon},
      {".", TokenKind::Dot},
      {"@", TokenKind::At},
  };
  SourceLoc loc = currentLoc();
  for (const Op &op : ops) {
    if (buffer.substr(pos, op.spelling.size()) != op.spelling)
      continue;
    pos += op.spelling.size();
    char c = op.spelling[0];
    if (c == '(' || c == '[') {
      brackets.push_back({c, loc});
    } else if ((c == ')' || c == ']') && !brackets.empty()) {
      char open = brackets.back().c;
      brackets.pop_back();
      if ((open == '(') != (c == ')'))
        return errorToken(loc, std::string("closing '") + c +
                                   "' does not match '" + open + "'");
    }
    return makeToken(op.kind, loc, std::string(op.spelling));
  }
  return lexUnknown();
}

Token Lexer::lexUnknown() {
  SourceLoc loc = currentLoc();
  unsigned char lead = static_cast<unsigned char>(peekChar());
  char buf[64];
  if (lead >= 0x20 && lead < 0x7f) {
    std::snprintf(buf, sizeof(buf), "invalid character '%c'", lead);
    ++pos;
    return errorToken(loc, buf);
  }
  // Decode one UTF-8 sequence so a multi-byte character is one error.
  unsigned len = lead >= 0xC2 && lead <= 0xDF   ? 2
                 : lead >= 0xE0 && lead <= 0xEF ? 3
                 : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                : 1;
  uint32_t cp = len == 2 ? lead & 0x1F : len == 3 ? lead & 0x0F : lead & 0x07;
  for (unsigned i = 1; i < len; ++i) {
    unsigned char cont = static_cast<unsigned char>(peekChar(i));
    if (pos + i >= buffer.size() || (cont & 0xC0) != 0x80) {
      len = 1;
      break;
    }
    cp = (cp << 6) | (cont & 0x3F);
  }
  if (lead < 0x80)
    std::snprintf(buf, sizeof(buf), "invalid control character 0x%02X", lead);
  else if (len == 1)
    std::snprintf(buf, sizeof(buf), "invalid byte 0x%02X", lead);
  else
    std::snprintf(buf, sizeof(buf), "invalid character U+%04X",
                  static_cast<unsigned>(cp));
  pos += len;
  return errorToken(loc, buf);
}

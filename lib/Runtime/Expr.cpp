//===- Expr.cpp - Integer launch expressions ------------------------------===//

#include "Runtime/Expr.h"
#include "Runtime/Support.h"

#include <algorithm>
#include <cassert>
#include <charconv>

using namespace tessel;

namespace tessel {

/// Recursive descent over the expression text, emitting postfix code.
class ExprParser {
public:
  ExprParser(std::string_view text, const Expr::Resolver &resolve, Expr &out)
      : text(text), resolve(resolve), out(out) {}

  Status run() {
    skipSpace();
    if (!parseSum(0))
      return std::move(error);
    if (pos < text.size()) {
      fail("unexpected '" + std::string(1, text[pos]) + "'");
      return std::move(error);
    }
    if (out.code.size() > Expr::kMaxCode)
      return Status::error("'" + std::string(text) + "': longer than " +
                           std::to_string(Expr::kMaxCode) + " operations");
    return Status();
  }

private:
  std::string_view text;
  const Expr::Resolver &resolve;
  Expr &out;
  size_t pos = 0;
  Status error;

  char peek() const { return pos < text.size() ? text[pos] : '\0'; }
  void skipSpace() {
    while (peek() == ' ' || peek() == '\t')
      ++pos;
  }
  bool failAt(size_t at, const std::string &message) {
    std::string where =
        at < text.size() ? " at column " + std::to_string(at + 1) : " at end";
    error = Status::error("'" + std::string(text) + "': " + message + where);
    return false;
  }
  bool fail(const std::string &message) { return failAt(pos, message); }
  void emit(Expr::Op op, int64_t operand = 0) {
    out.code.push_back({op, operand});
  }

  bool parseSum(unsigned depth);
  bool parseProduct(unsigned depth);
  bool parseUnary(unsigned depth);
  bool parseNumber();
  bool parseName(unsigned depth);
  bool parseCall(std::string_view callee, size_t at, unsigned depth);
};

} // namespace tessel

static bool isDigit(char c) { return c >= '0' && c <= '9'; }
static bool isNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool ExprParser::parseSum(unsigned depth) {
  if (!parseProduct(depth))
    return false;
  while (peek() == '+' || peek() == '-') {
    Expr::Op op = peek() == '+' ? Expr::Op::Add : Expr::Op::Sub;
    ++pos;
    skipSpace();
    if (!parseProduct(depth))
      return false;
    emit(op);
  }
  return true;
}

bool ExprParser::parseProduct(unsigned depth) {
  if (!parseUnary(depth))
    return false;
  while (peek() == '*' || peek() == '/' || peek() == '%') {
    Expr::Op op = peek() == '*'   ? Expr::Op::Mul
                  : peek() == '/' ? Expr::Op::Div
                                  : Expr::Op::Mod;
    ++pos;
    skipSpace();
    if (!parseUnary(depth))
      return false;
    emit(op);
  }
  return true;
}

bool ExprParser::parseUnary(unsigned depth) {
  if (depth >= Expr::kMaxDepth)
    return fail("nesting deeper than " + std::to_string(Expr::kMaxDepth));
  char c = peek();
  if (c == '-' || c == '+') {
    ++pos;
    skipSpace();
    if (!parseUnary(depth + 1))
      return false;
    if (c == '-')
      emit(Expr::Op::Neg);
    return true;
  }
  if (c == '(') {
    ++pos;
    skipSpace();
    if (!parseSum(depth + 1))
      return false;
    if (peek() != ')')
      return fail("expected ')'");
    ++pos;
    skipSpace();
    return true;
  }
  if (isDigit(c))
    return parseNumber();
  if (isNameStart(c))
    return parseName(depth);
  return fail(c ? "expected a number, a name or '('"
                : "expected a number, a name or '(', got the end");
}

bool ExprParser::parseNumber() {
  size_t start = pos;
  while (isDigit(peek()))
    ++pos;
  int64_t value;
  auto [end, ec] =
      std::from_chars(text.data() + start, text.data() + pos, value);
  if (ec != std::errc())
    return failAt(start, "integer literal too large");
  emit(Expr::Op::Push, value);
  skipSpace();
  return true;
}

bool ExprParser::parseName(unsigned depth) {
  size_t start = pos;
  while (isNameStart(peek()) || isDigit(peek()))
    ++pos;
  std::string_view name = text.substr(start, pos - start);
  skipSpace();
  if (peek() == '(')
    return parseCall(name, start, depth);
  Result<Expr::Symbol> symbol = resolve(name);
  if (!symbol.ok())
    return failAt(start, symbol.message());
  emit(symbol->kind == Expr::Symbol::Constant ? Expr::Op::Push : Expr::Op::Load,
       symbol->value);
  return true;
}

bool ExprParser::parseCall(std::string_view callee, size_t at, unsigned depth) {
  Expr::Op op;
  if (callee == "cdiv")
    op = Expr::Op::Cdiv;
  else if (callee == "min")
    op = Expr::Op::Min;
  else if (callee == "max")
    op = Expr::Op::Max;
  else
    return failAt(at, "unknown function '" + std::string(callee) +
                          "' (known: cdiv, min, max)");
  ++pos; // '('
  skipSpace();
  unsigned numArgs = 0;
  while (true) {
    if (!parseSum(depth + 1))
      return false;
    if (++numArgs > 1)
      emit(op);
    if (peek() == ')')
      break;
    if (peek() != ',')
      return fail("expected ',' or ')'");
    ++pos;
    skipSpace();
  }
  if (numArgs < 2 || (op == Expr::Op::Cdiv && numArgs != 2))
    return failAt(at, std::string(callee) + " takes " +
                          (op == Expr::Op::Cdiv ? "2" : "2 or more") +
                          " arguments, got " + std::to_string(numArgs));
  ++pos; // ')'
  skipSpace();
  return true;
}

Result<Expr> Expr::parse(std::string_view text, const Resolver &resolve) {
  Expr expr;
  expr.source = std::string(text);
  TESSEL_TRY(ExprParser(text, resolve, expr).run());
  return expr;
}

// Floor division and modulo as in Python; false if the quotient overflows
// (INT64_MIN / -1).
static bool floorDivMod(int64_t a, int64_t b, int64_t &quot, int64_t &rem) {
  if (b == -1) {
    rem = 0;
    return !__builtin_mul_overflow(a, b, &quot);
  }
  quot = a / b;
  rem = a % b;
  if (rem != 0 && ((rem < 0) != (b < 0))) {
    --quot;
    rem += b;
  }
  return true;
}

bool Expr::applyBinary(Op op, int64_t a, int64_t b, int64_t &r,
                       const char *&why) {
  why = "integer overflow";
  int64_t q, m;
  switch (op) {
  case Op::Add:
    return !__builtin_add_overflow(a, b, &r);
  case Op::Sub:
    return !__builtin_sub_overflow(a, b, &r);
  case Op::Mul:
    return !__builtin_mul_overflow(a, b, &r);
  case Op::Min:
    r = a < b ? a : b;
    return true;
  case Op::Max:
    r = a < b ? b : a;
    return true;
  default:
    break;
  }
  if (b == 0) {
    why = "division by zero";
    return false;
  }
  bool quotientFits = floorDivMod(a, b, q, m);
  if (op == Op::Mod) {
    r = m;
    return true;
  }
  // ceil(a / b) is one above the floor exactly when b does not divide a.
  r = op == Op::Div ? q : q + (m != 0);
  return quotientFits;
}

bool Expr::operator==(const Expr &other) const {
  return std::equal(code.begin(), code.end(), other.code.begin(),
                    other.code.end(), [](const Inst &a, const Inst &b) {
                      return a.op == b.op && a.operand == b.operand;
                    });
}

Result<int64_t> Expr::eval(const std::vector<int64_t> &slots) const {
  int64_t stack[kMaxCode]; // the stack never outgrows the code
  size_t top = 0;
  for (const Inst &inst : code) {
    switch (inst.op) {
    case Op::Push:
      stack[top++] = inst.operand;
      continue;
    case Op::Load:
      assert(size_t(inst.operand) < slots.size() && "unbound slot");
      stack[top++] = slots[inst.operand];
      continue;
    case Op::Neg:
      if (__builtin_sub_overflow(int64_t(0), stack[top - 1], &stack[top - 1]))
        return Status::error("'" + source + "': integer overflow");
      continue;
    default:
      break;
    }
    const char *why;
    --top;
    if (!applyBinary(inst.op, stack[top - 1], stack[top], stack[top - 1], why))
      return Status::error("'" + source + "': " + why);
  }
  return stack[0];
}

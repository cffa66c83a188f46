//===- Expr.h - Integer launch expressions ----------------------*- C++ -*-===//
//
// Grid sizes and workspace sizes in bundles are small integer expressions over
// a kernel's scalar parameters, e.g. "cdiv(N, BLOCK_M)" or "B * H". They are
// parsed and their names resolved when a bundle is loaded, so a launch only
// evaluates a short postfix program.
//
// Grammar: expr  := term (('+'|'-') term)*
//          term  := unary (('*'|'/'|'%') unary)*
//          unary := ('-'|'+') unary | INT | NAME | NAME '(' args ')'
//                 | '(' expr ')'
// Functions: cdiv(a, b), min(a, b, ...), max(a, b, ...). Arithmetic is on
// int64 with overflow checked; '/' and '%' floor (as in Python).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_EXPR_H
#define TESSEL_RUNTIME_EXPR_H

#include "tessel/Runtime.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tessel {

class Expr {
public:
  /// What a name stands for: a constant folded at parse time, or a slot of
  /// the value array given to eval().
  struct Symbol {
    enum Kind { Constant, Slot } kind;
    int64_t value; // the constant, or the slot index
  };
  /// Returns the symbol for a name or an error saying why it is not allowed.
  using Resolver = std::function<Result<Symbol>(std::string_view name)>;

  /// Errors read "'TEXT': MESSAGE at column N".
  static Result<Expr> parse(std::string_view text, const Resolver &resolve);

  /// Errors read "'TEXT': division by zero" (or integer overflow).
  Result<int64_t> eval(const std::vector<int64_t> &slots) const;

  const std::string &text() const { return source; }

  /// Whether the two compute the same value from the same slots (names
  /// resolved and constants folded; their texts may differ).
  bool operator==(const Expr &other) const;

  /// Nesting deeper than this is rejected at parse time.
  static constexpr unsigned kMaxDepth = 64;
  /// Longer expressions are rejected at parse time, so eval() needs no
  /// allocation.
  static constexpr unsigned kMaxCode = 256;

private:
  friend class ExprParser;
  // Postfix code; min/max of n arguments become n-1 binary Min/Max.
  enum class Op : uint8_t {
    Push,
    Load,
    Neg,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Cdiv,
    Min,
    Max
  };
  struct Inst {
    Op op;
    int64_t operand; // Push: the value; Load: the slot index
  };
  /// Applies a binary op; on failure returns false and names the reason.
  static bool applyBinary(Op op, int64_t a, int64_t b, int64_t &r,
                          const char *&why);

  std::string source;
  std::vector<Inst> code;
};

} // namespace tessel

#endif // TESSEL_RUNTIME_EXPR_H

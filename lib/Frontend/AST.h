//===- AST.h - Syntax tree of the Tessel DSL --------------------*- C++ -*-===//
//
// A plain syntax tree, independent of MLIR: the parser builds it and MLIRGen
// walks it. Nodes own their children through std::unique_ptr and carry a
// SourceLoc each.
//
// Dispatch is LLVM style: every node has a kind and a static classof(), so
// llvm::isa/dyn_cast work on it in MLIR-aware code, and the small helpers in
// tessel::ast::rtti do the same here without LLVM (no C++ RTTI needed).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_FRONTEND_AST_H
#define TESSEL_FRONTEND_AST_H

#include "Frontend/Diagnostics.h"

#include <cassert>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

namespace tessel::ast {

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

class Expr {
public:
  enum class Kind {
    Name,
    IntLit,
    FloatLit,
    BoolLit,
    NoneLit,
    StringLit,
    BinOp,
    UnaryOp,
    Compare,
    BoolOp,
    Call,
    Attribute,
    Subscript,
    Slice,
    Tuple,
  };

  Expr(Kind kind, SourceLoc loc) : kind(kind), loc(loc) {}
  virtual ~Expr() = default;
  Expr(const Expr &) = delete;
  Expr &operator=(const Expr &) = delete;

  Kind getKind() const { return kind; }
  SourceLoc getLoc() const { return loc; }

private:
  const Kind kind;
  SourceLoc loc;
};

using ExprPtr = std::unique_ptr<Expr>;
using ExprList = std::vector<ExprPtr>;

class Name : public Expr {
public:
  Name(SourceLoc loc, std::string name)
      : Expr(Kind::Name, loc), name(std::move(name)) {}
  const std::string &getName() const { return name; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Name; }

private:
  std::string name;
};

/// Any integer literal; its type (i32, or i64 if it does not fit) is decided
/// later.
class IntLit : public Expr {
public:
  IntLit(SourceLoc loc, int64_t value)
      : Expr(Kind::IntLit, loc), value(value) {}
  int64_t getValue() const { return value; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::IntLit; }

private:
  int64_t value;
};

class FloatLit : public Expr {
public:
  FloatLit(SourceLoc loc, double value)
      : Expr(Kind::FloatLit, loc), value(value) {}
  double getValue() const { return value; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::FloatLit; }

private:
  double value;
};

class BoolLit : public Expr {
public:
  BoolLit(SourceLoc loc, bool value) : Expr(Kind::BoolLit, loc), value(value) {}
  bool getValue() const { return value; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::BoolLit; }

private:
  bool value;
};

class NoneLit : public Expr {
public:
  explicit NoneLit(SourceLoc loc) : Expr(Kind::NoneLit, loc) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::NoneLit; }
};

/// Adjacent literals are already concatenated; escapes are decoded.
class StringLit : public Expr {
public:
  StringLit(SourceLoc loc, std::string value)
      : Expr(Kind::StringLit, loc), value(std::move(value)) {}
  const std::string &getValue() const { return value; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::StringLit; }

private:
  std::string value;
};

enum class BinOpKind {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  Pow,
  BitAnd,
  BitOr,
  BitXor,
  LShift,
  RShift,
};
const char *getBinOpSpelling(BinOpKind op);

/// Located at its operator.
class BinOp : public Expr {
public:
  BinOp(SourceLoc loc, BinOpKind op, ExprPtr lhs, ExprPtr rhs)
      : Expr(Kind::BinOp, loc), op(op), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  BinOpKind getOp() const { return op; }
  const Expr *getLHS() const { return lhs.get(); }
  const Expr *getRHS() const { return rhs.get(); }
  static bool classof(const Expr *e) { return e->getKind() == Kind::BinOp; }

private:
  BinOpKind op;
  ExprPtr lhs, rhs;
};

enum class UnaryOpKind { Neg, Pos, Invert, Not };
const char *getUnaryOpSpelling(UnaryOpKind op);

class UnaryOp : public Expr {
public:
  UnaryOp(SourceLoc loc, UnaryOpKind op, ExprPtr operand)
      : Expr(Kind::UnaryOp, loc), op(op), operand(std::move(operand)) {}
  UnaryOpKind getOp() const { return op; }
  const Expr *getOperand() const { return operand.get(); }
  static bool classof(const Expr *e) { return e->getKind() == Kind::UnaryOp; }

private:
  UnaryOpKind op;
  ExprPtr operand;
};

/// `is` and `is not` compare with None only (a constexpr test).
enum class CmpOpKind { Lt, Le, Gt, Ge, Eq, Ne, Is, IsNot };
const char *getCmpOpSpelling(CmpOpKind op);

/// One comparison: chained comparisons are rejected by the parser.
class Compare : public Expr {
public:
  Compare(SourceLoc loc, CmpOpKind op, ExprPtr lhs, ExprPtr rhs)
      : Expr(Kind::Compare, loc), op(op), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  CmpOpKind getOp() const { return op; }
  const Expr *getLHS() const { return lhs.get(); }
  const Expr *getRHS() const { return rhs.get(); }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Compare; }

private:
  CmpOpKind op;
  ExprPtr lhs, rhs;
};

enum class BoolOpKind { And, Or };
const char *getBoolOpSpelling(BoolOpKind op);

/// `a and b and c` is left-nested: ((a and b) and c).
class BoolOp : public Expr {
public:
  BoolOp(SourceLoc loc, BoolOpKind op, ExprPtr lhs, ExprPtr rhs)
      : Expr(Kind::BoolOp, loc), op(op), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  BoolOpKind getOp() const { return op; }
  const Expr *getLHS() const { return lhs.get(); }
  const Expr *getRHS() const { return rhs.get(); }
  static bool classof(const Expr *e) { return e->getKind() == Kind::BoolOp; }

private:
  BoolOpKind op;
  ExprPtr lhs, rhs;
};

/// `name=value` in a call or decorator.
struct Keyword {
  std::string name;
  SourceLoc loc;
  ExprPtr value;
};

/// Located where its callee is (`load` in `load(p)`, `to` in `x.to(f16)`).
class Call : public Expr {
public:
  Call(SourceLoc loc, ExprPtr callee, ExprList args,
       std::vector<Keyword> keywords)
      : Expr(Kind::Call, loc), callee(std::move(callee)), args(std::move(args)),
        keywords(std::move(keywords)) {}
  const Expr *getCallee() const { return callee.get(); }
  /// The callee's name when it is a plain Name, else "".
  const std::string &getCalleeName() const;
  const ExprList &getArgs() const { return args; }
  const std::vector<Keyword> &getKeywords() const { return keywords; }
  /// The keyword argument `name`, or null.
  const Keyword *findKeyword(const std::string &name) const;
  static bool classof(const Expr *e) { return e->getKind() == Kind::Call; }

private:
  ExprPtr callee;
  ExprList args;
  std::vector<Keyword> keywords;
};

/// `value.attr`, located at the attribute name (`to` in `x.to`).
class Attribute : public Expr {
public:
  Attribute(SourceLoc loc, ExprPtr value, std::string attr)
      : Expr(Kind::Attribute, loc), value(std::move(value)),
        attr(std::move(attr)) {}
  const Expr *getValue() const { return value.get(); }
  const std::string &getAttr() const { return attr; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Attribute; }

private:
  ExprPtr value;
  std::string attr;
};

/// `value[i0, i1, ...]`, located at the '['. Each index is an expression,
/// NoneLit (new axis) or Slice.
class Subscript : public Expr {
public:
  Subscript(SourceLoc loc, ExprPtr value, ExprList indices)
      : Expr(Kind::Subscript, loc), value(std::move(value)),
        indices(std::move(indices)) {}
  const Expr *getValue() const { return value.get(); }
  const ExprList &getIndices() const { return indices; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Subscript; }

private:
  ExprPtr value;
  ExprList indices;
};

/// `lower:upper` inside a subscript; either bound may be absent (null).
class Slice : public Expr {
public:
  Slice(SourceLoc loc, ExprPtr lower, ExprPtr upper)
      : Expr(Kind::Slice, loc), lower(std::move(lower)),
        upper(std::move(upper)) {}
  const Expr *getLower() const { return lower.get(); }
  const Expr *getUpper() const { return upper.get(); }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Slice; }

private:
  ExprPtr lower, upper;
};

class Tuple : public Expr {
public:
  Tuple(SourceLoc loc, ExprList elements)
      : Expr(Kind::Tuple, loc), elements(std::move(elements)) {}
  const ExprList &getElements() const { return elements; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Tuple; }

private:
  ExprList elements;
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

class Stmt {
public:
  enum class Kind {
    Assign,
    AugAssign,
    If,
    For,
    Return,
    Pass,
    ExprStmt,
    FunctionDef,
  };

  Stmt(Kind kind, SourceLoc loc) : kind(kind), loc(loc) {}
  virtual ~Stmt() = default;
  Stmt(const Stmt &) = delete;
  Stmt &operator=(const Stmt &) = delete;

  Kind getKind() const { return kind; }
  SourceLoc getLoc() const { return loc; }

private:
  const Kind kind;
  SourceLoc loc;
};

using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

/// `x = e` has one target; `a, b = e` (or `(a, b) = e`) is a tuple target.
/// Located at the first target.
class Assign : public Stmt {
public:
  Assign(SourceLoc loc, std::vector<std::unique_ptr<Name>> targets,
         bool tupleTarget, ExprPtr value)
      : Stmt(Kind::Assign, loc), targets(std::move(targets)),
        tupleTarget(tupleTarget), value(std::move(value)) {}
  const std::vector<std::unique_ptr<Name>> &getTargets() const {
    return targets;
  }
  /// True for `a, b = e` and also for `a, = e`.
  bool isTupleTarget() const { return tupleTarget; }
  const Expr *getValue() const { return value.get(); }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Assign; }

private:
  std::vector<std::unique_ptr<Name>> targets;
  bool tupleTarget;
  ExprPtr value;
};

/// `x op= e`, located at the operator.
class AugAssign : public Stmt {
public:
  AugAssign(SourceLoc loc, std::unique_ptr<Name> target, BinOpKind op,
            ExprPtr value)
      : Stmt(Kind::AugAssign, loc), target(std::move(target)), op(op),
        value(std::move(value)) {}
  const Name *getTarget() const { return target.get(); }
  BinOpKind getOp() const { return op; }
  const Expr *getValue() const { return value.get(); }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::AugAssign; }

private:
  std::unique_ptr<Name> target;
  BinOpKind op;
  ExprPtr value;
};

/// `elif` arrives as an else body holding a single nested If (located at
/// the `elif`).
class If : public Stmt {
public:
  If(SourceLoc loc, ExprPtr cond, StmtList thenBody, StmtList elseBody)
      : Stmt(Kind::If, loc), cond(std::move(cond)),
        thenBody(std::move(thenBody)), elseBody(std::move(elseBody)) {}
  const Expr *getCond() const { return cond.get(); }
  const StmtList &getThenBody() const { return thenBody; }
  const StmtList &getElseBody() const { return elseBody; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::If; }

private:
  ExprPtr cond;
  StmtList thenBody, elseBody;
};

/// `for target in iter:`; the parser guarantees iter is a call
/// (range/static_range are checked later).
class For : public Stmt {
public:
  For(SourceLoc loc, std::unique_ptr<Name> target, std::unique_ptr<Call> iter,
      StmtList body)
      : Stmt(Kind::For, loc), target(std::move(target)), iter(std::move(iter)),
        body(std::move(body)) {}
  const Name *getTarget() const { return target.get(); }
  const Call *getIter() const { return iter.get(); }
  const StmtList &getBody() const { return body; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::For; }

private:
  std::unique_ptr<Name> target;
  std::unique_ptr<Call> iter;
  StmtList body;
};

/// `return` (value null) or `return e`; `return a, b` returns a Tuple.
class Return : public Stmt {
public:
  Return(SourceLoc loc, ExprPtr value)
      : Stmt(Kind::Return, loc), value(std::move(value)) {}
  const Expr *getValue() const { return value.get(); }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Return; }

private:
  ExprPtr value;
};

class Pass : public Stmt {
public:
  explicit Pass(SourceLoc loc) : Stmt(Kind::Pass, loc) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Pass; }
};

class ExprStmt : public Stmt {
public:
  ExprStmt(SourceLoc loc, ExprPtr expr)
      : Stmt(Kind::ExprStmt, loc), expr(std::move(expr)) {}
  const Expr *getExpr() const { return expr.get(); }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::ExprStmt; }

private:
  ExprPtr expr;
};

struct Param {
  std::string name;
  SourceLoc loc;
  ExprPtr annotation;   // Null if absent.
  ExprPtr defaultValue; // Null if absent.
};

/// `@name` or `@name(key=value, ...)`.
struct Decorator {
  std::string name;
  SourceLoc loc;
  std::vector<Keyword> keywords;
};

class Module;

/// A `def`, at top level (a kernel or helper) or nested in another function.
/// Located at `def`.
class FunctionDef : public Stmt {
public:
  FunctionDef(SourceLoc loc, std::string name, SourceLoc nameLoc,
              std::optional<Decorator> decorator, std::vector<Param> params,
              ExprPtr returnAnnotation, StmtList body, bool nested)
      : Stmt(Kind::FunctionDef, loc), name(std::move(name)), nameLoc(nameLoc),
        decorator(std::move(decorator)), params(std::move(params)),
        returnAnnotation(std::move(returnAnnotation)), body(std::move(body)),
        nested(nested) {}
  const std::string &getName() const { return name; }
  SourceLoc getNameLoc() const { return nameLoc; }
  /// Null if the function has no decorator.
  const Decorator *getDecorator() const {
    return decorator ? &*decorator : nullptr;
  }
  const std::vector<Param> &getParams() const { return params; }
  /// The `-> T` annotation, or null.
  const Expr *getReturnAnnotation() const { return returnAnnotation.get(); }
  const StmtList &getBody() const { return body; }
  bool isNested() const { return nested; }
  /// The module (file) a top-level function is defined in; null for nested
  /// ones. The names its body calls are looked up there.
  const Module *getOwner() const { return owner; }
  void setOwner(const Module *m) { owner = m; }
  static bool classof(const Stmt *s) {
    return s->getKind() == Kind::FunctionDef;
  }

private:
  const Module *owner = nullptr;
  std::string name;
  SourceLoc nameLoc;
  std::optional<Decorator> decorator;
  std::vector<Param> params;
  ExprPtr returnAnnotation;
  StmtList body;
  bool nested;
};

/// `from MODULE import NAME, ...` at the top level: the @func helpers NAME of
/// the file MODULE.tsl beside this one.
struct Import {
  std::string module;
  SourceLoc moduleLoc;
  std::vector<std::pair<std::string, SourceLoc>> names;
};

/// One file: its top-level functions and its imports. The imported helpers
/// are bound by an ImportResolver (Imports.h), which owns their modules.
class Module {
public:
  Module(std::vector<std::unique_ptr<FunctionDef>> functions,
         std::vector<Import> imports = {});
  const std::vector<std::unique_ptr<FunctionDef>> &getFunctions() const {
    return functions;
  }
  const std::vector<Import> &getImports() const { return imports; }
  /// The first top-level function called `name` defined in this file, or
  /// null.
  const FunctionDef *lookupDefined(const std::string &name) const;
  /// lookupDefined's, else the helper imported under `name`, or null.
  const FunctionDef *lookup(const std::string &name) const;
  /// Makes `fn` (a function of an imported module) callable as `name`.
  void bindImport(const std::string &name, const FunctionDef *fn) {
    imported.emplace(name, fn);
  }
  const std::map<std::string, const FunctionDef *> &getImported() const {
    return imported;
  }

private:
  std::vector<std::unique_ptr<FunctionDef>> functions;
  std::vector<Import> imports;
  std::map<std::string, const FunctionDef *> imported;
};

//===----------------------------------------------------------------------===//
// Casting without LLVM. In a nested namespace so that argument-dependent
// lookup never pits these against llvm::isa in MLIR-aware code.
//===----------------------------------------------------------------------===//

namespace rtti {
template <typename To, typename From>
using CastResult = std::conditional_t<std::is_const_v<From>, const To, To>;

template <typename To, typename From> bool isa(From *node) {
  return node && To::classof(node);
}
template <typename To, typename From> CastResult<To, From> *cast(From *node) {
  assert(node && To::classof(node) && "cast to the wrong node kind");
  return static_cast<CastResult<To, From> *>(node);
}
template <typename To, typename From>
CastResult<To, From> *dyn_cast(From *node) {
  return isa<To>(node) ? static_cast<CastResult<To, From> *>(node) : nullptr;
}
} // namespace rtti

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

/// Indented tree, one node per line; with `withLocs` each line ends in
/// `@LINE:COL`. Used by tests and `tesselc --dump-ast`.
void dump(const Module &module, std::ostream &os, bool withLocs = false);
void dump(const Stmt &stmt, std::ostream &os, bool withLocs = false);
void dump(const Expr &expr, std::ostream &os, bool withLocs = false);
std::string dumpToString(const Module &module, bool withLocs = false);

/// One-line Python-like rendering with every operation parenthesised, e.g.
/// `(a + (b * c))`; for error messages and precedence tests.
std::string formatExpr(const Expr &expr);

} // namespace tessel::ast

#endif // TESSEL_FRONTEND_AST_H

//===- Generator.h - State of the IR emitter (internal) ---------*- C++ -*-===//
//
// Shared by MLIRGen.cpp (functions, statements, operators) and Builtins.cpp
// (the DSL's built-in calls). Not a public header.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_FRONTEND_GENERATOR_H
#define TESSEL_FRONTEND_GENERATOR_H

#include "Frontend/AST.h"
#include "Frontend/MLIRGen.h"
#include "tessel/TesselDialect.h"

#include "mlir/IR/Builders.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessel {

inline bool isFloat(mlir::Type t) { return llvm::isa<mlir::FloatType>(t); }
inline bool isInt(mlir::Type t) { return t.isSignlessInteger(); }
/// Numbers: integer or float scalars and tiles of them (not pointers, online
/// states or tensor descriptors, which arithmetic and conversions reject).
inline bool isArithmetic(mlir::Type t) {
  if (auto tile = llvm::dyn_cast<mlir::tessel::TileType>(t))
    t = tile.getElementType();
  return isFloat(t) || isInt(t);
}

/// A compile-time value: constexpr parameters and everything computed from
/// them only.
struct Const {
  enum class Kind { Int, Float, Bool, None } kind = Kind::None;
  int64_t i = 0;
  double f = 0;

  static Const ofInt(int64_t v) { return {Kind::Int, v, 0}; }
  static Const ofFloat(double v) { return {Kind::Float, 0, v}; }
  static Const ofBool(bool v) { return {Kind::Bool, v, 0}; }
  bool isNumber() const { return kind != Kind::None; }
  bool isIntegral() const { return kind == Kind::Int || kind == Kind::Bool; }
  double asDouble() const { return kind == Kind::Float ? f : double(i); }
};

class Env;

/// `n` and `noun`, pluralised: "1 argument", "2 arguments".
inline std::string pluralize(size_t n, const std::string &noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

/// What a DSL name or expression stands for while emitting.
struct TValue {
  enum class Kind {
    Invalid,  // An error was reported; silences follow-up errors.
    Constant, // constexpr number or bool (or None).
    Value,    // An SSA value: scalar, pointer, tile or online state.
    Type,     // A type name used as a value (`f16`, or a dtype constexpr).
    Function, // A @func helper or nested def.
    Builtin,  // A built-in function used as a value (`softmax_merge`).
    Tuple,
  } kind = Kind::Invalid;

  Const constant;
  mlir::Value value;
  mlir::Type type;
  const ast::FunctionDef *function = nullptr;
  std::shared_ptr<Env> closure; // Names a nested def can read.
  std::string builtin;
  std::vector<TValue> elements;

  static TValue invalid() { return {}; }
  static TValue ofConst(Const c) {
    TValue v;
    v.kind = Kind::Constant;
    v.constant = c;
    return v;
  }
  static TValue ofValue(mlir::Value value) {
    TValue v;
    v.kind = value ? Kind::Value : Kind::Invalid;
    v.value = value;
    return v;
  }
  static TValue ofType(mlir::Type type) {
    TValue v;
    v.kind = Kind::Type;
    v.type = type;
    return v;
  }
  static TValue ofTuple(std::vector<TValue> elements) {
    TValue v;
    v.kind = Kind::Tuple;
    v.elements = std::move(elements);
    return v;
  }
  bool isInvalid() const { return kind == Kind::Invalid; }
  bool isConst() const { return kind == Kind::Constant; }
  bool isValue() const { return kind == Kind::Value; }
  /// A constexpr number or a value of numbers (isArithmetic).
  bool isNumeric() const {
    return (isConst() && constant.isNumber()) ||
           (isValue() && isArithmetic(value.getType()));
  }
};

/// Names visible in a function body. Python scoping: one map per function;
/// `if` and `for` bodies work on copies that are merged back.
class Env {
public:
  std::map<std::string, TValue> names;
  /// Set for a nested def: the enclosing names, read-only.
  std::shared_ptr<Env> parent;
  /// Names that did not leave a run-time `if` or `for`, with why: the hint
  /// of an "unknown name" error.
  std::map<std::string, std::string> leftBehind;

  const TValue *lookup(const std::string &name) const {
    auto it = names.find(name);
    if (it != names.end())
      return &it->second;
    return parent ? parent->lookup(name) : nullptr;
  }
  const std::string *whyUnknown(const std::string &name) const {
    auto it = leftBehind.find(name);
    if (it != leftBehind.end())
      return &it->second;
    return parent ? parent->whyUnknown(name) : nullptr;
  }
};

/// Emits the kernels of one module.
class Generator {
public:
  Generator(mlir::MLIRContext &context, DiagnosticEngine &diag,
            const GenOptions &options);

  mlir::OwningOpRef<mlir::ModuleOp> run(const ast::Module &module);

  //===--- Diagnostics and locations -------------------------------------===//
  TValue error(SourceLoc loc, const std::string &message);
  mlir::Location loc(SourceLoc l) const;
  /// How a value's type reads in messages: `tile<64x32xf16>`, `ptr[f32]`.
  static std::string describe(mlir::Type type);
  std::string describe(const TValue &value) const;

  //===--- Expressions (MLIRGen.cpp) -------------------------------------===//
  TValue genExpr(const ast::Expr &expr);
  /// A constexpr integer (or bool) argument, or nullopt after an error.
  std::optional<int64_t> genConstInt(const ast::Expr &expr,
                                     const std::string &what);
  TValue genBinary(SourceLoc l, ast::BinOpKind op, TValue lhs, TValue rhs);
  TValue genCompare(SourceLoc l, ast::CmpOpKind op, TValue lhs, TValue rhs);
  TValue genUnary(SourceLoc l, ast::UnaryOpKind op, TValue operand);

  //===--- Conversions ----------------------------------------------------===//
  /// A constant as an SSA scalar of `type`.
  mlir::Value materialize(SourceLoc l, const Const &c, mlir::Type type);
  /// A constant with its natural type (i32/i64, f32, i1).
  mlir::Value materialize(SourceLoc l, const Const &c);
  /// That natural type; null for None.
  mlir::Type naturalType(const Const &c);
  /// Value or constant as an SSA value; constants get `hint`'s element type
  /// if given. Null (after an error) for other kinds.
  mlir::Value toValue(SourceLoc l, const TValue &v, mlir::Type hint = {});
  /// Converts the elements of `v` to `elementType` (no-op if equal).
  mlir::Value convert(SourceLoc l, mlir::Value v, mlir::Type elementType);
  /// Splats or broadcasts `v` to `shape` (empty: must stay scalar).
  mlir::Value broadcastTo(SourceLoc l, mlir::Value v,
                          llvm::ArrayRef<int64_t> shape);
  /// The broadcast shape of two shapes, or nullopt.
  static std::optional<llvm::SmallVector<int64_t>>
  broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);
  /// The common element type of a binary operation's operands.
  mlir::Type promote(mlir::Type a, mlir::Type b);
  /// Brings two operands to one shape and element type. Returns false after
  /// reporting an error.
  bool unify(SourceLoc l, TValue lhs, TValue rhs, mlir::Value &a,
             mlir::Value &b, const char *what);
  /// `type` with `shape` (a scalar when empty).
  mlir::Type shaped(llvm::ArrayRef<int64_t> shape, mlir::Type elementType);
  /// The most elements one tile may hold (Triton's limit too).
  static constexpr int64_t kMaxTileElements = int64_t(1) << 20;
  /// False, after reporting an error at `l`, if a tile of `shape` would hold
  /// more than kMaxTileElements.
  bool checkTileSize(SourceLoc l, llvm::ArrayRef<int64_t> shape);

  //===--- Built-in calls (Builtins.cpp) ---------------------------------===//
  TValue genCall(const ast::Call &call);
  TValue genBuiltin(const std::string &name, const ast::Call &call);
  TValue genMethod(const ast::Attribute &attr, const ast::Call &call);
  bool isBuiltin(const std::string &name) const;
  TValue genStreamK(const ast::Call &call);

  //===--- Functions and statements (MLIRGen.cpp) ------------------------===//
  /// Inlines a helper or nested def with evaluated arguments.
  TValue callFunction(SourceLoc l, const TValue &callee,
                      std::vector<TValue> args, SourceLoc callLoc);
  void genBody(const ast::StmtList &body);
  void genStmt(const ast::Stmt &stmt);
  void genAssign(const ast::Assign &assign);
  void genIf(const ast::If &stmt);
  /// Rejects annotations on helper parameters and results.
  void checkHelperSignature(const ast::FunctionDef &fn);
  void genFor(const ast::For &stmt);
  void bind(const std::string &name, TValue value) {
    env->names[name] = std::move(value);
  }
  std::optional<mlir::Type> parseTypeExpr(const ast::Expr &expr);
  std::optional<mlir::Type> scalarTypeByName(const std::string &name) const;

  mlir::MLIRContext &context;
  DiagnosticEngine &diag;
  const GenOptions &options;
  mlir::OpBuilder builder;
  std::shared_ptr<Env> env;
  /// Helpers being inlined, to reject recursion.
  std::vector<const ast::FunctionDef *> callStack;
  const ast::Module *module = nullptr;
  /// Set by `return` in the function being inlined.
  std::optional<TValue> returned;
  /// The depth of `for`/`if` nesting inside the function being emitted.
  unsigned controlDepth = 0;
  /// Call sites of the helpers being inlined, innermost last.
  std::vector<SourceLoc> inlineSites;
};

} // namespace tessel

#endif // TESSEL_FRONTEND_GENERATOR_H

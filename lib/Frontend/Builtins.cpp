//===- Builtins.cpp - The DSL's built-in functions ------------------------===//
//
// Each built-in checks its arguments and reports problems at the argument
// that is wrong, before any op is created, so the verifier never sees a bad
// op coming from the front end.
//
//===----------------------------------------------------------------------===//

#include "Frontend/Generator.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace ::tessel;
namespace tsl = mlir::tessel;

namespace {
/// Positional and keyword arguments matched to a built-in's parameter list.
struct Args {
  std::vector<const ast::Expr *> exprs;
  const ast::Expr *operator[](size_t i) const { return exprs[i]; }
};
} // namespace

/// Matches a call's arguments against `params`; the first `required` are
/// mandatory. Reports Python-style errors.
static std::optional<Args> matchArgs(Generator &g, const ast::Call &call,
                                     const std::string &name,
                                     std::initializer_list<const char *> params,
                                     size_t required) {
  std::vector<const char *> names(params);
  Args out;
  out.exprs.assign(names.size(), nullptr);
  const auto &args = call.getArgs();
  if (args.size() > names.size()) {
    std::string takes = names.empty()
                            ? "no arguments"
                            : "at most " + pluralize(names.size(), "argument");
    g.error(args[names.size()]->getLoc(), name + "() takes " + takes +
                                              ", got " +
                                              std::to_string(args.size()));
    return std::nullopt;
  }
  for (size_t i = 0; i < args.size(); ++i)
    out.exprs[i] = args[i].get();
  for (const ast::Keyword &kw : call.getKeywords()) {
    auto it = std::find_if(names.begin(), names.end(),
                           [&](const char *n) { return kw.name == n; });
    if (it == names.end()) {
      g.error(kw.loc,
              name + "() got an unexpected keyword argument '" + kw.name + "'");
      return std::nullopt;
    }
    size_t i = it - names.begin();
    if (out.exprs[i]) {
      g.error(kw.loc,
              name + "() got multiple values for argument '" + kw.name + "'");
      return std::nullopt;
    }
    out.exprs[i] = kw.value.get();
  }
  for (size_t i = 0; i < required; ++i)
    if (!out.exprs[i]) {
      g.error(call.getLoc(),
              name + "() is missing required argument '" + names[i] + "'");
      return std::nullopt;
    }
  return out;
}

static const char *const kBuiltins[] = {"program_id",    "num_programs",
                                        "arange",        "zeros",
                                        "full",          "load",
                                        "store",         "atomic_add",
                                        "dot",           "trans",
                                        "where",         "exp",
                                        "exp2",          "log",
                                        "log2",          "sqrt",
                                        "rsqrt",         "abs",
                                        "maximum",       "minimum",
                                        "max",           "min",
                                        "sum",           "cdiv",
                                        "softmax_state", "online_softmax",
                                        "softmax_merge", "softmax_finalize",
                                        "kl_state",      "online_kl",
                                        "kl_merge",      "kl_finalize",
                                        "stream_k",      "float",
                                        "range",         "static_range",
                                        "multiple_of",   "tensor_desc",
                                        "load_block",    "clock"};

bool Generator::isBuiltin(const std::string &name) const {
  for (const char *b : kBuiltins)
    if (name == b)
      return true;
  return false;
}

TValue Generator::genCall(const ast::Call &call) {
  const ast::Expr *callee = call.getCallee();
  if (auto *attr = ast::rtti::dyn_cast<ast::Attribute>(callee))
    return genMethod(*attr, call);
  TValue fn;
  auto *name = ast::rtti::dyn_cast<ast::Name>(callee);
  if (name && !env->lookup(name->getName()) &&
      !module->lookup(name->getName()) && isBuiltin(name->getName()))
    return genBuiltin(name->getName(), call);
  fn = genExpr(*callee);
  if (fn.isInvalid())
    return fn;
  if (fn.kind == TValue::Kind::Builtin)
    return genBuiltin(fn.builtin, call);
  if (fn.kind != TValue::Kind::Function)
    return error(call.getLoc(), describe(fn) + " is not callable");
  // Helpers take positional and keyword arguments.
  const auto &params = fn.function->getParams();
  std::vector<TValue> args;
  for (const ast::ExprPtr &a : call.getArgs())
    args.push_back(genExpr(*a));
  for (const ast::Keyword &kw : call.getKeywords()) {
    auto it =
        std::find_if(params.begin(), params.end(),
                     [&](const ast::Param &p) { return p.name == kw.name; });
    if (it == params.end())
      return error(kw.loc, "'" + fn.function->getName() +
                               "' has no parameter '" + kw.name + "'");
    size_t i = it - params.begin();
    if (i < call.getArgs().size())
      return error(kw.loc, "'" + fn.function->getName() +
                               "' got multiple values for '" + kw.name + "'");
    // Gaps before a keyword argument take their defaults.
    while (args.size() <= i)
      args.push_back(TValue::ofConst(Const()));
    args[i] = genExpr(*kw.value);
  }
  return callFunction(call.getLoc(), fn, std::move(args), call.getLoc());
}

TValue Generator::genMethod(const ast::Attribute &attr, const ast::Call &call) {
  if (attr.getAttr() != "to")
    return error(attr.getLoc(), "unknown method '" + attr.getAttr() +
                                    "'; the only method is x.to(T)");
  TValue v = genExpr(*attr.getValue());
  auto args = matchArgs(*this, call, "to", {"dtype"}, 1);
  if (v.isInvalid() || !args)
    return TValue::invalid();
  std::optional<Type> type = parseTypeExpr(*(*args)[0]);
  if (!type || isa<tsl::PtrType>(*type))
    return error((*args)[0]->getLoc(),
                 "to() expects a scalar type (i1, i32, i64, f16, bf16, f32)");
  if (v.isConst() && v.constant.isNumber()) {
    Const c = v.constant;
    if (c.kind == Const::Kind::Float && type->isSignlessInteger()) {
      // Truncates toward zero, as the conversion of values does.
      double t = std::trunc(c.f);
      if (!(t >= -0x1p63 && t < 0x1p63))
        return error(attr.getLoc(), "cannot convert " + describe(v) + " to " +
                                        describe(*type));
      c = Const::ofInt(int64_t(t));
    }
    return TValue::ofValue(materialize(call.getLoc(), c, *type));
  }
  if (!v.isNumeric())
    return error(attr.getLoc(),
                 "cannot convert " + describe(v) + " to " + describe(*type));
  return TValue::ofValue(convert(call.getLoc(), v.value, *type));
}

//===----------------------------------------------------------------------===//
// Helpers for the built-ins
//===----------------------------------------------------------------------===//

namespace {
/// Shorthands over a Generator for one call.
struct CallCtx {
  Generator &g;
  const ast::Call &call;
  const std::string &name;
  SourceLoc l;

  TValue arg(const ast::Expr *e) {
    return e ? g.genExpr(*e) : TValue::ofConst(Const());
  }
  TValue fail(const ast::Expr *at, const std::string &msg) {
    return g.error(at ? at->getLoc() : l, name + "(): " + msg);
  }
  /// A tile or scalar SSA value (constants materialised with `hint`).
  Value value(const ast::Expr *e, const TValue &v, Type hint = {}) {
    if (v.isInvalid())
      return {};
    if (!v.isValue() && !v.isConst()) {
      fail(e, "expected a value, got " + g.describe(v));
      return {};
    }
    return g.toValue(e->getLoc(), v, hint);
  }
  tsl::TileType tile(const ast::Expr *e, const TValue &v, int rank = -1) {
    if (v.isInvalid())
      return {};
    auto t = v.isValue() ? dyn_cast<tsl::TileType>(v.value.getType())
                         : tsl::TileType();
    if (!t || (rank >= 0 && t.getRank() != rank)) {
      fail(e, "expected a " + (rank >= 0 ? std::to_string(rank) + "-D " : "") +
                  "tile, got " + g.describe(v));
      return {};
    }
    return t;
  }
  template <typename StateT> StateT state(const ast::Expr *e, const TValue &v) {
    if (v.isInvalid())
      return {};
    auto s = v.isValue() ? dyn_cast<StateT>(v.value.getType()) : StateT();
    if (!s)
      fail(e,
           std::string("expected a ") +
               (std::is_same_v<StateT, tsl::SoftmaxStateType> ? "softmax_state"
                                                              : "kl_state") +
               ", got " + g.describe(v));
    return s;
  }
  /// A tile of f32 with `shape`, converting float tiles.
  Value f32Tile(const ast::Expr *e, const TValue &v, ArrayRef<int64_t> shape,
                const std::string &what) {
    tsl::TileType t = tile(e, v);
    if (!t)
      return {};
    if (t.getShape() != shape || !isa<FloatType>(t.getElementType())) {
      fail(e, what + " must be " +
                  g.describe(g.shaped(shape, g.builder.getF32Type())) +
                  ", got " + g.describe(t));
      return {};
    }
    return g.convert(e->getLoc(), v.value, g.builder.getF32Type());
  }
};
} // namespace

static std::optional<SmallVector<int64_t>> shapeArg(CallCtx &c,
                                                    const ast::Expr *e) {
  TValue v = c.arg(e);
  SmallVector<int64_t> shape;
  std::vector<TValue> dims =
      v.kind == TValue::Kind::Tuple ? v.elements : std::vector<TValue>{v};
  // Point at the offending dimension when the shape is written out.
  auto *tuple = ast::rtti::dyn_cast<ast::Tuple>(e);
  for (size_t i = 0; i < dims.size(); ++i) {
    const TValue &d = dims[i];
    if (d.isInvalid())
      return std::nullopt;
    if (!d.isConst() || d.constant.kind != Const::Kind::Int ||
        d.constant.i <= 0) {
      bool exact = tuple && tuple->getElements().size() == dims.size();
      c.fail(exact ? tuple->getElements()[i].get() : e,
             "a shape is a tuple of positive constexpr integers, got " +
                 c.g.describe(d));
      return std::nullopt;
    }
    shape.push_back(d.constant.i);
  }
  if (!c.g.checkTileSize(e->getLoc(), shape))
    return std::nullopt;
  return shape;
}

static std::optional<Type> dtypeArg(CallCtx &c, const ast::Expr *e,
                                    Type fallback) {
  if (!e)
    return fallback;
  std::optional<Type> t = c.g.parseTypeExpr(*e);
  if (!t || isa<tsl::PtrType>(*t)) {
    c.fail(e, "expected a scalar type (i1, i32, i64, f16, bf16, f32)");
    return std::nullopt;
  }
  return t;
}

/// `v` broadcast to the shape of the pointers it goes with, or null after
/// reporting that it does not fit.
static Value broadcastToPointers(CallCtx &c, const ast::Expr *e, Value v,
                                 Type ptrType, const char *what) {
  ArrayRef<int64_t> shape = tsl::getShapeOrEmpty(ptrType);
  auto common =
      Generator::broadcastShapes(tsl::getShapeOrEmpty(v.getType()), shape);
  if (!common || ArrayRef<int64_t>(*common) != shape) {
    c.fail(e, std::string(what) + " " + c.g.describe(v.getType()) +
                  " does not broadcast to the pointers' shape " +
                  c.g.describe(ptrType));
    return {};
  }
  return c.g.broadcastTo(e->getLoc(), v, shape);
}

/// The mask of a memory access, broadcast to the pointers' shape.
static std::optional<Value> maskArg(CallCtx &c, const ast::Expr *e,
                                    Type ptrType) {
  if (!e)
    return Value();
  TValue m = c.arg(e);
  if (m.isConst() && m.constant.kind == Const::Kind::None)
    return Value();
  Value v = c.value(e, m);
  if (!v)
    return std::nullopt;
  if (!getElementTypeOrSelf(v.getType()).isInteger(1)) {
    c.fail(e, "the mask must be boolean, got " + c.g.describe(v.getType()));
    return std::nullopt;
  }
  if (Value mask = broadcastToPointers(c, e, v, ptrType, "mask"))
    return mask;
  return std::nullopt;
}

/// A value stored through pointers of `ptrType`: converted within float or
/// within integer types and broadcast to the pointers' shape.
static Value storedValue(CallCtx &c, const ast::Expr *e, Type ptrType) {
  Type pointee = getElementTypeOrSelf(tsl::getPointeeLikeType(ptrType));
  TValue tv = c.arg(e);
  Value v = c.value(e, tv, pointee);
  if (!v)
    return {};
  Type elt = getElementTypeOrSelf(v.getType());
  bool numbers = isArithmetic(v.getType());
  if (!numbers || isa<FloatType>(elt) != isa<FloatType>(pointee)) {
    c.fail(e,
           "cannot store " + c.g.describe(v.getType()) + " through " +
               c.g.describe(ptrType) +
               (numbers ? " (convert with .to(" + c.g.describe(pointee) + "))"
                        : ""));
    return {};
  }
  return broadcastToPointers(c, e, c.g.convert(e->getLoc(), v, pointee),
                             ptrType, "value");
}

static Value pointerArg(CallCtx &c, const ast::Expr *e) {
  TValue p = c.arg(e);
  if (p.isInvalid())
    return {};
  if (!p.isValue() || !tsl::isPtrLike(p.value.getType())) {
    c.fail(e,
           "expected a pointer or a tile of pointers, got " + c.g.describe(p));
    return {};
  }
  return p.value;
}

//===----------------------------------------------------------------------===//
// Built-ins
//===----------------------------------------------------------------------===//

static TValue genMemory(CallCtx &c) {
  Generator &g = c.g;
  Location at = g.loc(c.l);
  bool isLoad = c.name == "load";
  auto args = isLoad
                  ? matchArgs(g, c.call, c.name, {"ptrs", "mask", "other"}, 1)
                  : matchArgs(g, c.call, c.name, {"ptrs", "value", "mask"}, 2);
  if (!args)
    return TValue::invalid();
  Value ptr = pointerArg(c, (*args)[0]);
  if (!ptr)
    return TValue::invalid();
  Type ptrType = ptr.getType();
  auto mask = maskArg(c, (*args)[isLoad ? 1 : 2], ptrType);
  if (!mask)
    return TValue::invalid();
  if (isLoad) {
    Value other;
    if ((*args)[2]) {
      if (!*mask)
        return c.fail((*args)[2], "'other' needs a mask");
      other = storedValue(c, (*args)[2], ptrType);
      if (!other)
        return TValue::invalid();
    }
    return TValue::ofValue(tsl::LoadOp::create(
        g.builder, at, tsl::getPointeeLikeType(ptrType), ptr, *mask, other));
  }
  Value value = storedValue(c, (*args)[1], ptrType);
  if (!value)
    return TValue::invalid();
  if (c.name == "store") {
    tsl::StoreOp::create(g.builder, at, ptr, value, *mask);
    return TValue::ofConst(Const());
  }
  Type pointee = getElementTypeOrSelf(value.getType());
  if (!pointee.isF32() && !pointee.isInteger(32))
    return c.fail((*args)[0],
                  "needs f32 or i32 pointees, got " + g.describe(ptrType));
  return TValue::ofValue(tsl::AtomicAddOp::create(
      g.builder, at, value.getType(), ptr, value, *mask));
}

/// The elements of a tuple argument (a single value counts as a tuple of
/// one), each pointed at by its own expression when the tuple is written out.
static std::vector<std::pair<const ast::Expr *, TValue>>
tupleArg(CallCtx &c, const ast::Expr *e) {
  TValue v = c.arg(e);
  std::vector<TValue> elems =
      v.kind == TValue::Kind::Tuple ? v.elements : std::vector<TValue>{v};
  auto *tuple = ast::rtti::dyn_cast<ast::Tuple>(e);
  bool exact = tuple && tuple->getElements().size() == elems.size();
  std::vector<std::pair<const ast::Expr *, TValue>> out;
  for (size_t i = 0; i < elems.size(); ++i)
    out.emplace_back(exact ? tuple->getElements()[i].get() : e, elems[i]);
  return out;
}

/// Integer scalars (constexpr or values) converted to `type`; nullopt after
/// an error.
static std::optional<SmallVector<Value>>
intScalars(CallCtx &c, ArrayRef<std::pair<const ast::Expr *, TValue>> elems,
           Type type, const std::string &what) {
  SmallVector<Value> values;
  for (auto &[e, v] : elems) {
    if (v.isInvalid())
      return std::nullopt;
    bool intConst = v.isConst() && v.constant.kind == Const::Kind::Int;
    bool intValue = v.isValue() && isInt(v.value.getType()) &&
                    !v.value.getType().isInteger(1);
    if (!intConst && !intValue) {
      c.fail(e, what + " must be integer scalars, got " + c.g.describe(v));
      return std::nullopt;
    }
    Value x = c.value(e, v, type);
    if (!x)
      return std::nullopt;
    values.push_back(c.g.convert(e->getLoc(), x, type));
  }
  return values;
}

static TValue genTensorDesc(CallCtx &c) {
  Generator &g = c.g;
  auto args =
      matchArgs(g, c.call, c.name, {"base", "shape", "strides", "block"}, 4);
  if (!args)
    return TValue::invalid();
  TValue base = c.arg((*args)[0]);
  if (base.isInvalid())
    return base;
  auto ptr = base.isValue() ? dyn_cast<tsl::PtrType>(base.value.getType())
                            : tsl::PtrType();
  if (!ptr)
    return c.fail((*args)[0],
                  "the base must be a pointer, got " + g.describe(base));
  auto block = shapeArg(c, (*args)[3]);
  if (!block)
    return TValue::invalid();
  auto shapeElems = tupleArg(c, (*args)[1]);
  auto strideElems = tupleArg(c, (*args)[2]);
  size_t rank = block->size();
  if (rank > 5)
    return c.fail((*args)[3], "a block has at most 5 dimensions, got " +
                                  std::to_string(rank));
  if (shapeElems.size() != rank || strideElems.size() != rank)
    return c.fail((*args)[1], "shape, strides and block need one entry per "
                              "dimension, got " +
                                  std::to_string(shapeElems.size()) + ", " +
                                  std::to_string(strideElems.size()) + " and " +
                                  std::to_string(rank));
  const auto &[innerExpr, inner] = strideElems.back();
  if (!inner.isConst() || inner.constant.kind != Const::Kind::Int ||
      inner.constant.i != 1)
    return c.fail(innerExpr, "the innermost stride must be the constant 1 "
                             "(rows are contiguous), got " +
                                 g.describe(inner));
  strideElems.pop_back();
  Type i64 = g.builder.getI64Type();
  auto shape = intScalars(c, shapeElems, i64, "sizes");
  auto strides = intScalars(c, strideElems, i64, "strides");
  if (!shape || !strides)
    return TValue::invalid();
  if (llvm::count_if(*block, [](int64_t d) { return d != 1; }) > 2)
    return c.fail((*args)[3], "at most two block dimensions may differ from "
                              "1 (a block loads a 1-D or 2-D tile)");
  auto type = tsl::TensorDescType::get(g.builder.getContext(), *block,
                                       ptr.getPointeeType());
  return TValue::ofValue(tsl::MakeTensorDescOp::create(
      g.builder, g.loc(c.l), type, base.value, *shape, *strides));
}

static TValue genLoadBlock(CallCtx &c) {
  Generator &g = c.g;
  auto args = matchArgs(g, c.call, c.name, {"desc", "offsets"}, 2);
  if (!args)
    return TValue::invalid();
  TValue desc = c.arg((*args)[0]);
  if (desc.isInvalid())
    return desc;
  auto type = desc.isValue()
                  ? dyn_cast<tsl::TensorDescType>(desc.value.getType())
                  : tsl::TensorDescType();
  if (!type)
    return c.fail((*args)[0],
                  "expected a tensor_desc, got " + g.describe(desc));
  auto elems = tupleArg(c, (*args)[1]);
  if (elems.size() != type.getRank())
    return c.fail((*args)[1], "needs one offset per dimension (" +
                                  std::to_string(type.getRank()) + "), got " +
                                  std::to_string(elems.size()));
  auto coords = intScalars(c, elems, g.builder.getI32Type(), "offsets");
  if (!coords)
    return TValue::invalid();
  return TValue::ofValue(tsl::LoadBlockOp::create(
      g.builder, g.loc(c.l),
      g.shaped(type.getTileShape(), type.getElementType()), desc.value,
      *coords));
}

static TValue genElementwiseMath(CallCtx &c) {
  Generator &g = c.g;
  bool exponential = c.name == "exp" || c.name == "exp2";
  auto args = exponential ? matchArgs(g, c.call, c.name, {"x", "ftz"}, 1)
                          : matchArgs(g, c.call, c.name, {"x"}, 1);
  if (!args)
    return TValue::invalid();
  // ftz=True: results below 2^-126 are 0 (ex2.approx.ftz: no range fix-up
  // around the hardware unit), for exponentials whose tiny results nothing
  // keeps, such as probabilities about to be rounded for a product.
  bool ftz = false;
  if (exponential && (*args)[1]) {
    std::optional<int64_t> n = g.genConstInt(*(*args)[1], "ftz");
    if (!n)
      return TValue::invalid();
    if (*n != 0 && *n != 1)
      return c.fail((*args)[1],
                    "ftz must be True or False, got " + std::to_string(*n));
    ftz = *n == 1;
  }
  TValue x = c.arg((*args)[0]);
  if (x.isInvalid())
    return x;
  if (ftz && !(x.isValue() && isa<tsl::TileType>(x.value.getType())))
    return c.fail((*args)[1], "ftz applies to tiles; " + c.name +
                                  " of a scalar keeps subnormal results");
  if (x.isConst() && x.constant.isNumber()) { // constexpr math
    double v = x.constant.asDouble();
    double r = llvm::StringSwitch<double>(c.name)
                   .Case("exp", std::exp(v))
                   .Case("exp2", std::exp2(v))
                   .Case("log", std::log(v))
                   .Case("log2", std::log2(v))
                   .Case("sqrt", std::sqrt(v))
                   .Case("rsqrt", 1 / std::sqrt(v))
                   .Default(std::fabs(v));
    if (c.name == "abs" && x.constant.kind == Const::Kind::Int)
      return TValue::ofConst(Const::ofInt(std::llabs(x.constant.i)));
    return TValue::ofConst(Const::ofFloat(r));
  }
  Value v = c.value((*args)[0], x);
  if (!v)
    return TValue::invalid();
  Type elt = getElementTypeOrSelf(v.getType());
  bool isFloat = isa<FloatType>(elt);
  if (tsl::isPtrLike(v.getType()) || !(isFloat || elt.isSignlessInteger()) ||
      (!isFloat && c.name != "abs"))
    return c.fail((*args)[0], "expects float operands, got " +
                                  g.describe(v.getType()) +
                                  (isFloat ? "" : " (convert with .to(f32))"));
  Location at = g.loc(c.l);
  if (isa<tsl::TileType>(v.getType())) {
    auto kind = llvm::StringSwitch<tsl::UnaryKind>(c.name)
                    .Case("exp", tsl::UnaryKind::exp)
                    .Case("exp2", tsl::UnaryKind::exp2)
                    .Case("log", tsl::UnaryKind::log)
                    .Case("log2", tsl::UnaryKind::log2)
                    .Case("sqrt", tsl::UnaryKind::sqrt)
                    .Case("rsqrt", tsl::UnaryKind::rsqrt)
                    .Default(tsl::UnaryKind::abs);
    return TValue::ofValue(tsl::UnaryOp::create(g.builder, at, kind, v, ftz));
  }
  Value r;
  if (c.name == "exp")
    r = math::ExpOp::create(g.builder, at, v);
  else if (c.name == "exp2")
    r = math::Exp2Op::create(g.builder, at, v);
  else if (c.name == "log")
    r = math::LogOp::create(g.builder, at, v);
  else if (c.name == "log2")
    r = math::Log2Op::create(g.builder, at, v);
  else if (c.name == "sqrt")
    r = math::SqrtOp::create(g.builder, at, v);
  else if (c.name == "rsqrt")
    r = math::RsqrtOp::create(g.builder, at, v);
  else if (isFloat)
    r = math::AbsFOp::create(g.builder, at, v);
  else
    r = math::AbsIOp::create(g.builder, at, v);
  return TValue::ofValue(r);
}

/// maximum/minimum, and max/min of two operands.
static TValue genMinMax(CallCtx &c, bool isMax) {
  Generator &g = c.g;
  auto args = matchArgs(g, c.call, c.name, {"a", "b"}, 2);
  if (!args)
    return TValue::invalid();
  TValue a = c.arg((*args)[0]), b = c.arg((*args)[1]);
  if (a.isInvalid() || b.isInvalid())
    return TValue::invalid();
  if (a.isConst() && b.isConst()) {
    if (!a.constant.isNumber() || !b.constant.isNumber())
      return c.fail(nullptr, "expects numbers, got " + g.describe(a) + " and " +
                                 g.describe(b));
    bool pickA = isMax ? a.constant.asDouble() >= b.constant.asDouble()
                       : a.constant.asDouble() <= b.constant.asDouble();
    return pickA ? a : b;
  }
  Value x, y;
  if (!g.unify(c.l, a, b, x, y, c.name.c_str()))
    return TValue::invalid();
  Location at = g.loc(c.l);
  if (isa<tsl::TileType>(x.getType()))
    return TValue::ofValue(tsl::BinaryOp::create(
        g.builder, at, isMax ? tsl::BinaryKind::max : tsl::BinaryKind::min, x,
        y));
  if (isa<FloatType>(x.getType()))
    return TValue::ofValue(
        isMax ? Value(arith::MaximumFOp::create(g.builder, at, x, y))
              : Value(arith::MinimumFOp::create(g.builder, at, x, y)));
  return TValue::ofValue(
      isMax ? Value(arith::MaxSIOp::create(g.builder, at, x, y))
            : Value(arith::MinSIOp::create(g.builder, at, x, y)));
}

static TValue genReduce(CallCtx &c, tsl::ReduceKind kind) {
  Generator &g = c.g;
  auto args = matchArgs(g, c.call, c.name, {"x", "axis"}, 1);
  if (!args)
    return TValue::invalid();
  TValue x = c.arg((*args)[0]);
  tsl::TileType t = c.tile((*args)[0], x);
  if (!t)
    return TValue::invalid();
  if (tsl::isPtrLike(t))
    return c.fail((*args)[0], "cannot reduce pointers");
  Value v = x.value;
  Location at = g.loc(c.l);
  int64_t axis = 0;
  if ((*args)[1]) {
    auto a = g.genConstInt(*(*args)[1], "axis");
    if (!a)
      return TValue::invalid();
    axis = *a < 0 ? *a + t.getRank() : *a;
    if (axis < 0 || axis >= t.getRank())
      return c.fail((*args)[1], "axis " + std::to_string(*a) +
                                    " is out of range for " + g.describe(t));
  }
  // Summing booleans counts them (as in Python), in i32.
  Type elt = t.getElementType();
  if (kind == tsl::ReduceKind::sum && elt.isInteger(1)) {
    elt = g.builder.getI32Type();
    v = g.convert(c.l, v, elt);
  }
  auto reduce = [&](Value v, int64_t axis) -> Value {
    auto vt = cast<tsl::TileType>(v.getType());
    SmallVector<int64_t> shape(vt.getShape());
    shape.erase(shape.begin() + axis);
    return tsl::ReduceOp::create(g.builder, at,
                                 g.shaped(shape, vt.getElementType()), kind, v,
                                 uint32_t(axis));
  };
  // Reduce everything: the last dimension first, down to a scalar (each
  // step keeps the data where it is, unlike flattening the tile).
  if (!(*args)[1])
    for (int64_t d = t.getRank() - 1; d > 0; --d)
      v = reduce(v, d);
  return TValue::ofValue(reduce(v, axis));
}

static TValue genDot(CallCtx &c) {
  Generator &g = c.g;
  auto args = matchArgs(g, c.call, c.name, {"a", "b", "acc"}, 2);
  if (!args)
    return TValue::invalid();
  TValue ta = c.arg((*args)[0]), tb = c.arg((*args)[1]);
  tsl::TileType a = c.tile((*args)[0], ta, 2), b = c.tile((*args)[1], tb, 2);
  if (!a || !b)
    return TValue::invalid();
  if (a.getElementType() != b.getElementType() ||
      !isa<FloatType>(a.getElementType()))
    return c.fail((*args)[1], "operands must have one float type among f16, "
                              "bf16 and f32, got " +
                                  g.describe(a) + " and " + g.describe(b));
  if (a.getDimSize(1) != b.getDimSize(0))
    return c.fail((*args)[1], "expects a: MxK and b: KxN, got " +
                                  g.describe(a) + " and " + g.describe(b));
  SmallVector<int64_t> shape = {a.getDimSize(0), b.getDimSize(1)};
  if (!g.checkTileSize(c.l, shape))
    return TValue::invalid();
  Value acc;
  if ((*args)[2]) {
    acc = c.f32Tile((*args)[2], c.arg((*args)[2]), shape, "acc");
    if (!acc)
      return TValue::invalid();
  } else {
    Location at = g.loc(c.l);
    Value zero = g.materialize(c.l, Const::ofFloat(0), g.builder.getF32Type());
    acc = tsl::SplatOp::create(g.builder, at,
                               g.shaped(shape, g.builder.getF32Type()), zero);
  }
  return TValue::ofValue(tsl::DotOp::create(
      g.builder, g.loc(c.l), acc.getType(), ta.value, tb.value, acc));
}

static TValue genWhere(CallCtx &c) {
  Generator &g = c.g;
  auto args = matchArgs(g, c.call, c.name, {"condition", "x", "y"}, 3);
  if (!args)
    return TValue::invalid();
  TValue cond = c.arg((*args)[0]), x = c.arg((*args)[1]), y = c.arg((*args)[2]);
  if (cond.isInvalid() || x.isInvalid() || y.isInvalid())
    return TValue::invalid();
  if (cond.isConst())
    return cond.constant.asDouble() != 0 ? x : y;
  Value cv = c.value((*args)[0], cond);
  if (!cv)
    return TValue::invalid();
  if (!getElementTypeOrSelf(cv.getType()).isInteger(1))
    return c.fail((*args)[0], "the condition must be boolean, got " +
                                  g.describe(cv.getType()));
  Value a, b;
  if (!g.unify(c.l, x, y, a, b, "where"))
    return TValue::invalid();
  auto shape = Generator::broadcastShapes(tsl::getShapeOrEmpty(cv.getType()),
                                          tsl::getShapeOrEmpty(a.getType()));
  if (!shape)
    return c.fail((*args)[0], "cannot broadcast the condition " +
                                  g.describe(cv.getType()) + " with " +
                                  g.describe(a.getType()));
  if (!g.checkTileSize(c.l, *shape))
    return TValue::invalid();
  Location at = g.loc(c.l);
  cv = g.broadcastTo(c.l, cv, *shape);
  a = g.broadcastTo(c.l, a, *shape);
  b = g.broadcastTo(c.l, b, *shape);
  if (shape->empty())
    return TValue::ofValue(arith::SelectOp::create(g.builder, at, cv, a, b));
  return TValue::ofValue(tsl::SelectOp::create(g.builder, at, cv, a, b));
}

static TValue genOnline(CallCtx &c) {
  Generator &g = c.g;
  Location at = g.loc(c.l);
  Type f32 = g.builder.getF32Type();
  if (c.name == "softmax_state" || c.name == "kl_state") {
    bool softmax = c.name == "softmax_state";
    auto args = softmax ? matchArgs(g, c.call, c.name, {"rows", "cols"}, 2)
                        : matchArgs(g, c.call, c.name, {"rows"}, 1);
    if (!args)
      return TValue::invalid();
    auto rows = g.genConstInt(*(*args)[0], "rows");
    auto cols = softmax ? g.genConstInt(*(*args)[1], "cols") : rows;
    if (!rows || !cols)
      return TValue::invalid();
    if (*rows <= 0 || *cols <= 0)
      return c.fail(*rows <= 0 ? (*args)[0] : (*args)[1],
                    softmax ? "rows and cols must be positive"
                            : "rows must be positive");
    if (!g.checkTileSize(c.l, softmax ? SmallVector<int64_t>{*rows, *cols}
                                      : SmallVector<int64_t>{*rows}))
      return TValue::invalid();
    if (softmax)
      return TValue::ofValue(tsl::SoftmaxInitOp::create(
          g.builder, at, tsl::SoftmaxStateType::get(&g.context, *rows, *cols)));
    return TValue::ofValue(tsl::KLInitOp::create(
        g.builder, at, tsl::KLStateType::get(&g.context, *rows)));
  }
  if (c.name == "online_softmax") {
    auto args = matchArgs(g, c.call, c.name, {"state", "scores", "values"}, 3);
    if (!args)
      return TValue::invalid();
    TValue st = c.arg((*args)[0]), s = c.arg((*args)[1]), v = c.arg((*args)[2]);
    auto state = c.state<tsl::SoftmaxStateType>((*args)[0], st);
    tsl::TileType scores = c.tile((*args)[1], s, 2),
                  values = c.tile((*args)[2], v, 2);
    if (!state || !scores || !values)
      return TValue::invalid();
    int64_t n = scores.getDimSize(1);
    Value sv = c.f32Tile((*args)[1], s, {state.getRows(), n}, "scores");
    if (!sv)
      return TValue::invalid();
    if (values.getShape() != ArrayRef<int64_t>{n, state.getCols()} ||
        !isa<FloatType>(values.getElementType()))
      return c.fail((*args)[2],
                    "values must be a float tile<" + std::to_string(n) + "x" +
                        std::to_string(state.getCols()) +
                        "> (keys of the scores x cols of the state), got " +
                        g.describe(values));
    return TValue::ofValue(tsl::OnlineSoftmaxOp::create(g.builder, at, state,
                                                        st.value, sv, v.value));
  }
  if (c.name == "online_kl") {
    auto args =
        matchArgs(g, c.call, c.name, {"state", "teacher", "student"}, 3);
    if (!args)
      return TValue::invalid();
    TValue st = c.arg((*args)[0]), s = c.arg((*args)[1]), t = c.arg((*args)[2]);
    auto state = c.state<tsl::KLStateType>((*args)[0], st);
    tsl::TileType ts = c.tile((*args)[1], s, 2);
    if (!state || !ts)
      return TValue::invalid();
    SmallVector<int64_t> shape = {state.getRows(), ts.getDimSize(1)};
    Value sv = c.f32Tile((*args)[1], s, shape, "teacher scores");
    Value tv = sv ? c.f32Tile((*args)[2], t, shape, "student scores") : Value();
    if (!tv)
      return TValue::invalid();
    return TValue::ofValue(
        tsl::OnlineKLOp::create(g.builder, at, state, st.value, sv, tv));
  }
  bool softmax = c.name.rfind("softmax", 0) == 0;
  if (c.name == "softmax_merge" || c.name == "kl_merge") {
    auto args = matchArgs(g, c.call, c.name, {"a", "b"}, 2);
    if (!args)
      return TValue::invalid();
    TValue a = c.arg((*args)[0]), b = c.arg((*args)[1]);
    Type ta = softmax ? Type(c.state<tsl::SoftmaxStateType>((*args)[0], a))
                      : Type(c.state<tsl::KLStateType>((*args)[0], a));
    Type tb = softmax ? Type(c.state<tsl::SoftmaxStateType>((*args)[1], b))
                      : Type(c.state<tsl::KLStateType>((*args)[1], b));
    if (!ta || !tb)
      return TValue::invalid();
    if (ta != tb)
      return c.fail((*args)[1], "cannot merge " + g.describe(ta) + " with " +
                                    g.describe(tb));
    if (softmax)
      return TValue::ofValue(
          tsl::SoftmaxMergeOp::create(g.builder, at, a.value, b.value));
    return TValue::ofValue(
        tsl::KLMergeOp::create(g.builder, at, a.value, b.value));
  }
  // softmax_finalize / kl_finalize
  auto args = matchArgs(g, c.call, c.name, {"state"}, 1);
  if (!args)
    return TValue::invalid();
  TValue st = c.arg((*args)[0]);
  if (softmax) {
    auto state = c.state<tsl::SoftmaxStateType>((*args)[0], st);
    if (!state)
      return TValue::invalid();
    auto op = tsl::SoftmaxFinalizeOp::create(
        g.builder, at, g.shaped({state.getRows(), state.getCols()}, f32),
        g.shaped({state.getRows()}, f32), st.value);
    return TValue::ofTuple(
        {TValue::ofValue(op.getOutput()), TValue::ofValue(op.getLse())});
  }
  auto state = c.state<tsl::KLStateType>((*args)[0], st);
  if (!state)
    return TValue::invalid();
  Type row = g.shaped({state.getRows()}, f32);
  auto op = tsl::KLFinalizeOp::create(g.builder, at, row, row, row, st.value);
  return TValue::ofTuple({TValue::ofValue(op.getKl()),
                          TValue::ofValue(op.getLseTeacher()),
                          TValue::ofValue(op.getLseStudent())});
}

/// Flattens a partial state (a value or a tuple of values) into SSA values.
static bool flattenState(const TValue &v, SmallVectorImpl<Value> &out) {
  if (v.isValue()) {
    out.push_back(v.value);
    return true;
  }
  if (v.kind != TValue::Kind::Tuple || v.elements.empty())
    return false;
  for (const TValue &e : v.elements)
    if (!flattenState(e, out))
      return false;
  return true;
}

/// Rebuilds a state of the shape of `like` from consecutive block arguments.
static TValue rebuildState(const TValue &like, Block::BlockArgListType &args,
                           size_t &next) {
  if (like.isValue())
    return TValue::ofValue(args[next++]);
  std::vector<TValue> elements;
  for (const TValue &e : like.elements)
    elements.push_back(rebuildState(e, args, next));
  return TValue::ofTuple(std::move(elements));
}

TValue Generator::genStreamK(const ast::Call &call) {
  std::string name = "stream_k";
  CallCtx c{*this, call, name, call.getLoc()};
  auto args = matchArgs(*this, call, name,
                        {"units", "iters", "body", "merge", "epilogue", "rows",
                         "cluster", "max_rows"},
                        5);
  if (!args)
    return TValue::invalid();
  // cluster: the CTAs that share each unit (1: the persistent grid's).
  int64_t cluster = 1;
  if (const ast::Expr *e = (*args)[6]) {
    std::optional<int64_t> size = genConstInt(*e, "cluster");
    if (!size)
      return TValue::invalid();
    if (*size < 1 || *size > 16)
      return c.fail(e, "cluster must be in [1, 16] (CTAs of a thread-block "
                       "cluster), got " +
                           std::to_string(*size));
    cluster = *size;
  }
  // max_rows: a bound on rows, so that partial states take less memory.
  std::optional<int64_t> maxRows;
  if (const ast::Expr *e = (*args)[7]) {
    maxRows = genConstInt(*e, "max_rows");
    if (!maxRows)
      return TValue::invalid();
    if (*maxRows < 1)
      return c.fail(e, "max_rows must be positive, got " +
                           std::to_string(*maxRows));
    if (!(*args)[5])
      return c.fail(e, "max_rows bounds rows, which is not given");
  }
  Type i32 = builder.getI32Type();
  Value units = c.value((*args)[0], c.arg((*args)[0]), i32);
  Value iters = c.value((*args)[1], c.arg((*args)[1]), i32);
  TValue body = c.arg((*args)[2]), merge = c.arg((*args)[3]),
         epilogue = c.arg((*args)[4]);
  if (!units || !iters || body.isInvalid() || merge.isInvalid() ||
      epilogue.isInvalid())
    return TValue::invalid();
  // rows: the state's live rows (its other rows are padding).
  Value rows;
  if (const ast::Expr *e = (*args)[5]) {
    rows = c.value(e, c.arg(e), i32);
    if (!rows)
      return TValue::invalid();
  }
  for (auto [v, e, what] : {std::tuple(units, (*args)[0], "units and iters"),
                            std::tuple(iters, (*args)[1], "units and iters"),
                            std::tuple(rows, (*args)[5], "rows")})
    if (v && !v.getType().isInteger(32))
      return c.fail(e, std::string(what) + " must be i32, got " +
                           describe(v.getType()));
  auto isFn = [](const TValue &v) { return v.kind == TValue::Kind::Function; };
  if (!isFn(body))
    return c.fail((*args)[2], "body must be a function, got " + describe(body));
  if (!isFn(epilogue))
    return c.fail((*args)[4],
                  "epilogue must be a function, got " + describe(epilogue));
  if (!isFn(merge) &&
      !(merge.kind == TValue::Kind::Builtin &&
        (merge.builtin == "softmax_merge" || merge.builtin == "kl_merge")))
    return c.fail((*args)[3], "merge must be a function, softmax_merge or "
                              "kl_merge, got " +
                                  describe(merge));
  // Each function is called with a fixed argument list.
  for (auto [fn, e, role, signature, n] :
       {std::tuple(&body, (*args)[2], "body", "(unit, begin, end)", 3u),
        std::tuple(&merge, (*args)[3], "merge", "(a, b)", 2u),
        std::tuple(&epilogue, (*args)[4], "epilogue", "(unit, state)", 2u)}) {
    if (!isFn(*fn))
      continue;
    const auto &params = fn->function->getParams();
    size_t required = 0;
    for (const ast::Param &p : params)
      required += p.defaultValue ? 0 : 1;
    if (params.size() < n || required > n)
      return c.fail(e, std::string(role) + " is called as " + role + signature +
                           ", but '" + fn->function->getName() + "' takes " +
                           pluralize(params.size(), "parameter"));
  }
  Location at = loc(call.getLoc());
  auto op = tsl::StreamKOp::create(
      builder, at, units, iters, rows,
      cluster > 1 ? builder.getI64IntegerAttr(cluster) : IntegerAttr(),
      IntegerAttr());
  OpBuilder::InsertionGuard guard(builder);

  // body(unit, begin, end) -> state
  Block *bodyBlock =
      builder.createBlock(&op.getBody(), {}, {i32, i32, i32}, {at, at, at});
  std::vector<TValue> bodyArgs;
  for (BlockArgument a : bodyBlock->getArguments())
    bodyArgs.push_back(TValue::ofValue(a));
  TValue state =
      callFunction(call.getLoc(), body, bodyArgs, (*args)[2]->getLoc());
  SmallVector<Value> stateValues;
  if (state.isInvalid())
    return state;
  if (!flattenState(state, stateValues))
    return c.fail((*args)[2], "body must return a partial state (values), "
                              "got " +
                                  describe(state));
  tsl::YieldOp::create(builder, at, stateValues);
  SmallVector<Type> types = llvm::to_vector(ValueRange(stateValues).getTypes());
  if (rows)
    if (Type t = tsl::StreamKOp::findStateWithoutRows(types))
      return c.fail((*args)[5],
                    "rows needs every value of the partial state to have the "
                    "same number of rows (tiles, online states), got " +
                        describe(t));
  // A bound of the state's rows or more bounds nothing.
  if (maxRows && *maxRows < tsl::StreamKOp::getStateRows(types.front()))
    op.setMaxRowsAttr(builder.getI64IntegerAttr(*maxRows));
  SmallVector<Location> locs(types.size(), at);

  // merge(a, b) -> state
  SmallVector<Type> twice(types);
  twice.append(types);
  SmallVector<Location> twiceLocs(twice.size(), at);
  Block *mergeBlock = builder.createBlock(&op.getMerge(), {}, twice, twiceLocs);
  auto mergeArgs = mergeBlock->getArguments();
  size_t next = 0;
  TValue a = rebuildState(state, mergeArgs, next);
  TValue b = rebuildState(state, mergeArgs, next);
  TValue merged;
  if (isFn(merge)) {
    merged = callFunction(call.getLoc(), merge, {a, b}, (*args)[3]->getLoc());
  } else {
    if (types.size() != 1 || !state.isValue())
      return c.fail((*args)[3], merge.builtin +
                                    " merges a single state; the body "
                                    "returns a tuple");
    std::string mergeName = merge.builtin;
    CallCtx mc{*this, call, mergeName, (*args)[3]->getLoc()};
    bool ok = mergeName == "softmax_merge"
                  ? isa<tsl::SoftmaxStateType>(types[0])
                  : isa<tsl::KLStateType>(types[0]);
    if (!ok)
      return mc.fail((*args)[3], "the body returns " + describe(types[0]));
    if (mergeName == "softmax_merge")
      merged = TValue::ofValue(
          tsl::SoftmaxMergeOp::create(builder, at, a.value, b.value));
    else
      merged = TValue::ofValue(
          tsl::KLMergeOp::create(builder, at, a.value, b.value));
  }
  SmallVector<Value> mergedValues;
  if (merged.isInvalid())
    return merged;
  if (!flattenState(merged, mergedValues) ||
      TypeRange(ValueRange(mergedValues)) != TypeRange(types))
    return c.fail((*args)[3], "merge must return a state like the body's, "
                              "got " +
                                  describe(merged));
  tsl::YieldOp::create(builder, at, mergedValues);

  // epilogue(unit, state)
  SmallVector<Type> epiTypes = {i32};
  epiTypes.append(types);
  SmallVector<Location> epiLocs(epiTypes.size(), at);
  Block *epiBlock =
      builder.createBlock(&op.getEpilogue(), {}, epiTypes, epiLocs);
  auto epiArgs = epiBlock->getArguments();
  next = 1;
  TValue epiState = rebuildState(state, epiArgs, next);
  TValue result =
      callFunction(call.getLoc(), epilogue,
                   {TValue::ofValue(epiBlock->getArgument(0)), epiState},
                   (*args)[4]->getLoc());
  if (!result.isInvalid() &&
      !(result.isConst() && result.constant.kind == Const::Kind::None))
    return c.fail((*args)[4], "epilogue must not return a value");
  tsl::YieldOp::create(builder, at);
  return TValue::ofConst(Const());
}

/// multiple_of(x, n): records on kernel parameter x that every launch passes
/// a multiple of n (for a pointer, an n-byte aligned address) and returns x.
/// The hint belongs to the parameter, not to the value at this point, so it
/// is kept whichever helper or branch states it; hints combine by lcm.
static TValue genMultipleOf(CallCtx &c) {
  Generator &g = c.g;
  auto args = matchArgs(g, c.call, c.name, {"x", "n"}, 2);
  if (!args)
    return TValue::invalid();
  TValue x = c.arg((*args)[0]), n = c.arg((*args)[1]);
  if (x.isInvalid() || n.isInvalid())
    return TValue::invalid();
  // Inlined helpers and nested defs see the kernel's own entry arguments.
  auto param = x.isValue() ? dyn_cast<BlockArgument>(x.value) : BlockArgument();
  auto kernel =
      param ? dyn_cast_or_null<func::FuncOp>(param.getOwner()->getParentOp())
            : func::FuncOp();
  if (!kernel || param.getOwner() != &kernel.getBody().front())
    return g.error((*args)[0]->getLoc(),
                   "multiple_of() applies to a kernel parameter; got " +
                       std::string(x.isValue() ? "a computed " : "") +
                       g.describe(x));
  if (!tsl::acceptsMultipleOf(param.getType()))
    return c.fail((*args)[0], "applies to i32, i64 and ptr parameters, got " +
                                  g.describe(param.getType()));
  if (!n.isConst() || n.constant.kind != Const::Kind::Int || n.constant.i < 1)
    return c.fail((*args)[1], "n must be a positive constexpr integer, got " +
                                  g.describe(n));
  unsigned index = param.getArgNumber();
  int64_t multiple = n.constant.i;
  if (int64_t known = tsl::getMultipleOf(kernel, index)) {
    int64_t gcd = std::gcd(known, multiple);
    if (__builtin_mul_overflow(known / gcd, multiple, &multiple))
      return c.fail((*args)[1], "the hints on this parameter combine (lcm) "
                                "to more than 2^63 - 1");
  }
  kernel.setArgAttr(index, tsl::TesselDialect::getMultipleOfAttrName(),
                    g.builder.getI64IntegerAttr(multiple));
  return x;
}

TValue Generator::genBuiltin(const std::string &name, const ast::Call &call) {
  CallCtx c{*this, call, name, call.getLoc()};
  Location at = loc(call.getLoc());
  if (name == "program_id" || name == "num_programs") {
    auto args = matchArgs(*this, call, name, {"axis"}, 1);
    if (!args)
      return TValue::invalid();
    auto axis = genConstInt(*(*args)[0], "axis");
    if (!axis)
      return TValue::invalid();
    if (*axis < 0 || *axis > 2)
      return c.fail((*args)[0],
                    "axis must be 0, 1 or 2, got " + std::to_string(*axis));
    if (name == "program_id")
      return TValue::ofValue(tsl::ProgramIdOp::create(
          builder, at, builder.getI32Type(), builder.getI32IntegerAttr(*axis)));
    return TValue::ofValue(tsl::NumProgramsOp::create(
        builder, at, builder.getI32Type(), builder.getI32IntegerAttr(*axis)));
  }
  if (name == "clock") {
    if (!matchArgs(*this, call, name, {}, 0))
      return TValue::invalid();
    return TValue::ofValue(
        tsl::ClockOp::create(builder, at, builder.getI64Type()));
  }
  if (name == "arange") {
    auto args = matchArgs(*this, call, name, {"start", "end"}, 2);
    if (!args)
      return TValue::invalid();
    auto start = genConstInt(*(*args)[0], "arange's start");
    auto end = genConstInt(*(*args)[1], "arange's end");
    if (!start || !end)
      return TValue::invalid();
    if (*end <= *start || *start < INT32_MIN || *end > INT32_MAX)
      return c.fail((*args)[1], "needs start < end within i32, got [" +
                                    std::to_string(*start) + ", " +
                                    std::to_string(*end) + ")");
    if (!checkTileSize(call.getLoc(), {*end - *start}))
      return TValue::invalid();
    return TValue::ofValue(tsl::ArangeOp::create(
        builder, at, shaped({*end - *start}, builder.getI32Type()),
        builder.getI32IntegerAttr(*start), builder.getI32IntegerAttr(*end)));
  }
  if (name == "zeros" || name == "full") {
    bool full = name == "full";
    auto args =
        full ? matchArgs(*this, call, name, {"shape", "value", "dtype"}, 2)
             : matchArgs(*this, call, name, {"shape", "dtype"}, 1);
    if (!args)
      return TValue::invalid();
    auto shape = shapeArg(c, (*args)[0]);
    if (!shape)
      return TValue::invalid();
    TValue value = full ? c.arg((*args)[1]) : TValue::ofConst(Const::ofInt(0));
    if (value.isInvalid())
      return value;
    Type fallback = builder.getF32Type();
    if (full && value.isValue())
      fallback = value.value.getType();
    else if (full && value.constant.kind == Const::Kind::Int)
      fallback = builder.getI32Type();
    else if (full && value.constant.kind == Const::Kind::Bool)
      fallback = builder.getI1Type();
    auto dtype = dtypeArg(c, (*args)[full ? 2 : 1], fallback);
    if (!dtype)
      return TValue::invalid();
    Value scalar = c.value(full ? (*args)[1] : (*args)[0], value, *dtype);
    if (!scalar)
      return TValue::invalid();
    if (!scalar.getType().isIntOrFloat())
      return c.fail((*args)[1], "the value must be a scalar number, got " +
                                    describe(scalar.getType()));
    scalar = convert(call.getLoc(), scalar, *dtype);
    return TValue::ofValue(
        tsl::SplatOp::create(builder, at, shaped(*shape, *dtype), scalar));
  }
  if (name == "load" || name == "store" || name == "atomic_add")
    return genMemory(c);
  if (name == "dot")
    return genDot(c);
  if (name == "trans") {
    auto args = matchArgs(*this, call, name, {"x"}, 1);
    if (!args)
      return TValue::invalid();
    TValue x = c.arg((*args)[0]);
    tsl::TileType t = c.tile((*args)[0], x, 2);
    if (!t)
      return TValue::invalid();
    return TValue::ofValue(tsl::TransOp::create(
        builder, at,
        shaped({t.getDimSize(1), t.getDimSize(0)}, t.getElementType()), x.value,
        builder.getDenseI32ArrayAttr({1, 0})));
  }
  if (name == "where")
    return genWhere(c);
  if (name == "exp" || name == "exp2" || name == "log" || name == "log2" ||
      name == "sqrt" || name == "rsqrt" || name == "abs")
    return genElementwiseMath(c);
  if (name == "maximum" || name == "minimum")
    return genMinMax(c, name == "maximum");
  if (name == "max" || name == "min") {
    // Two operands and no axis: elementwise, as Python's max(a, b).
    if (call.getArgs().size() == 2 && call.getKeywords().empty())
      return genMinMax(c, name == "max");
    return genReduce(c, name == "max" ? tsl::ReduceKind::max
                                      : tsl::ReduceKind::min);
  }
  if (name == "sum")
    return genReduce(c, tsl::ReduceKind::sum);
  if (name == "cdiv") {
    auto args = matchArgs(*this, call, name, {"a", "b"}, 2);
    if (!args)
      return TValue::invalid();
    TValue a = c.arg((*args)[0]), b = c.arg((*args)[1]);
    if (a.isInvalid() || b.isInvalid())
      return TValue::invalid();
    if (a.isConst() && b.isConst()) {
      if (!a.constant.isIntegral() || !b.constant.isIntegral() ||
          b.constant.i == 0)
        return c.fail((*args)[1], "needs integers and a non-zero divisor");
      int64_t x = a.constant.i, y = b.constant.i;
      return TValue::ofConst(Const::ofInt((x + y - 1) / y));
    }
    Value x, y;
    if (!unify(call.getLoc(), a, b, x, y, "cdiv"))
      return TValue::invalid();
    if (isa<tsl::TileType>(x.getType()) || !x.getType().isSignlessInteger())
      return c.fail((*args)[0],
                    "needs integer scalars, got " + describe(x.getType()));
    return TValue::ofValue(arith::CeilDivSIOp::create(builder, at, x, y));
  }
  if (name == "stream_k")
    return genStreamK(call);
  if (name == "multiple_of")
    return genMultipleOf(c);
  if (name == "tensor_desc")
    return genTensorDesc(c);
  if (name == "load_block")
    return genLoadBlock(c);
  if (name == "float") {
    auto args = matchArgs(*this, call, name, {"x"}, 1);
    if (!args)
      return TValue::invalid();
    if (auto *s = ast::rtti::dyn_cast<ast::StringLit>((*args)[0])) {
      const std::string &v = s->getValue();
      if (v == "inf" || v == "+inf")
        return TValue::ofConst(Const::ofFloat(INFINITY));
      if (v == "-inf")
        return TValue::ofConst(Const::ofFloat(-INFINITY));
      if (v == "nan")
        return TValue::ofConst(Const::ofFloat(NAN));
      return c.fail((*args)[0], "expects \"inf\", \"-inf\" or \"nan\"");
    }
    TValue x = c.arg((*args)[0]);
    if (x.isConst() && x.constant.isNumber())
      return TValue::ofConst(Const::ofFloat(x.constant.asDouble()));
    if (x.isInvalid())
      return x;
    return c.fail((*args)[0], "expects a constexpr number or \"inf\"; use "
                              "x.to(f32) for values");
  }
  if (name == "range" || name == "static_range")
    return error(call.getLoc(),
                 name + "() is only allowed as the iterable of a 'for'");
  return genOnline(c);
}

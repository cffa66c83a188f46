//===- Expressions.cpp - Expressions of the DSL
//-----------------------------===//
//
// Names, literals, operators, calls, indexing and tuples.
//
//===----------------------------------------------------------------------===//

#include "Frontend/Generator.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <set>
#include <sstream>

using namespace mlir;
using namespace ::tessel;
namespace tsl = mlir::tessel;

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

std::optional<int64_t> Generator::genConstInt(const ast::Expr &expr,
                                              const std::string &what) {
  TValue v = genExpr(expr);
  if (v.isInvalid())
    return std::nullopt;
  if (v.isConst() && v.constant.isIntegral())
    return v.constant.i;
  error(expr.getLoc(),
        what + " must be a constexpr integer, got " + describe(v));
  return std::nullopt;
}

/// The size of a slice `x : x + SIZE` whose start x is a runtime value: the
/// upper bound must be the start's expression plus a constexpr integer.
static std::optional<int64_t> runtimeSliceSize(Generator &g,
                                               const ast::Slice &slice) {
  const std::string start = ast::formatExpr(*slice.getLower());
  const auto *upper = slice.getUpper()
                          ? ast::rtti::dyn_cast<ast::BinOp>(slice.getUpper())
                          : nullptr;
  if (!upper || upper->getOp() != ast::BinOpKind::Add ||
      ast::formatExpr(*upper->getLHS()) != start) {
    g.error(slice.getLoc(), "a slice with a runtime start needs a constexpr "
                            "size: write it as `" +
                                start + " : " + start + " + SIZE`");
    return std::nullopt;
  }
  return g.genConstInt(*upper->getRHS(), "a slice size");
}

static TValue genSubscript(Generator &g, const ast::Subscript &sub) {
  TValue base = g.genExpr(*sub.getValue());
  if (base.isInvalid())
    return base;
  SourceLoc l = sub.getLoc();
  if (!base.isValue() || !isa<tsl::TileType>(base.value.getType()))
    return g.error(l, "only tiles can be indexed, got " + g.describe(base));
  auto tile = cast<tsl::TileType>(base.value.getType());
  ArrayRef<int64_t> shape = tile.getShape();
  SmallVector<int64_t> offsets(shape.size(), 0), sizes(shape);
  SmallVector<Value> dynamicOffsets;
  SmallVector<int32_t> newAxes;
  size_t dim = 0, outPos = 0;
  for (const ast::ExprPtr &item : sub.getIndices()) {
    if (ast::rtti::isa<ast::NoneLit>(item.get())) {
      newAxes.push_back(outPos++);
      continue;
    }
    auto *slice = ast::rtti::dyn_cast<ast::Slice>(item.get());
    if (!slice)
      return g.error(item->getLoc(),
                     "integer indexing of tiles is not supported; use "
                     "slices (constexpr bounds, or `x:x + SIZE` with a "
                     "runtime x) and None");
    if (dim >= shape.size())
      return g.error(item->getLoc(),
                     "too many indices for " + g.describe(tile));
    int64_t lo = 0, hi = shape[dim];
    if (slice->getLower()) {
      TValue start = g.genExpr(*slice->getLower());
      if (start.isInvalid())
        return start;
      if (start.isValue() && start.value.getType().isSignlessInteger() &&
          !start.value.getType().isInteger(1)) {
        // A runtime start: the size must still be constexpr, as `x : x + N`.
        std::optional<int64_t> size = runtimeSliceSize(g, *slice);
        if (!size)
          return TValue::invalid();
        if (*size <= 0 || *size > shape[dim])
          return g.error(item->getLoc(), "slice size " + std::to_string(*size) +
                                             " does not fit dimension " +
                                             std::to_string(dim) + " of size " +
                                             std::to_string(shape[dim]));
        offsets[dim] = ShapedType::kDynamic;
        dynamicOffsets.push_back(
            g.convert(item->getLoc(), start.value, g.builder.getI32Type()));
        sizes[dim] = *size;
        ++dim;
        ++outPos;
        continue;
      }
      if (!start.isConst() || !start.constant.isIntegral())
        return g.error(slice->getLower()->getLoc(),
                       "a slice bound must be an integer, got " +
                           g.describe(start));
      lo = start.constant.i;
    }
    if (slice->getUpper()) {
      auto v = g.genConstInt(*slice->getUpper(), "a slice bound");
      if (!v)
        return TValue::invalid();
      hi = *v;
    }
    if (lo < 0 || hi > shape[dim] || lo >= hi)
      return g.error(item->getLoc(), "slice [" + std::to_string(lo) + ":" +
                                         std::to_string(hi) +
                                         "] is out of bounds for "
                                         "dimension " +
                                         std::to_string(dim) + " of size " +
                                         std::to_string(shape[dim]));
    offsets[dim] = lo;
    sizes[dim] = hi - lo;
    ++dim;
    ++outPos;
  }
  Value v = base.value;
  Type elt = tile.getElementType();
  if (ArrayRef<int64_t>(sizes) != shape || !dynamicOffsets.empty())
    v = tsl::ExtractSliceOp::create(g.builder, g.loc(l), g.shaped(sizes, elt),
                                    v, dynamicOffsets, offsets);
  for (int32_t axis : newAxes) {
    sizes.insert(sizes.begin() + axis, 1);
    v = tsl::ExpandDimsOp::create(g.builder, g.loc(l), g.shaped(sizes, elt), v,
                                  g.builder.getI32IntegerAttr(axis));
  }
  return TValue::ofValue(v);
}

TValue Generator::genExpr(const ast::Expr &expr) {
  using K = ast::Expr::Kind;
  SourceLoc l = expr.getLoc();
  switch (expr.getKind()) {
  case K::Name: {
    const std::string &name = ast::rtti::cast<ast::Name>(&expr)->getName();
    if (const TValue *v = env->lookup(name))
      return *v;
    if (const ast::FunctionDef *fn = module->lookup(name)) {
      const ast::Decorator *dec = fn->getDecorator();
      if (dec && dec->name == "kernel")
        return error(l, "kernel '" + name +
                            "' cannot be called or used as a value; only "
                            "@func helpers can");
      TValue v;
      v.kind = TValue::Kind::Function;
      v.function = fn;
      return v;
    }
    if (isBuiltin(name)) {
      TValue v;
      v.kind = TValue::Kind::Builtin;
      v.builtin = name;
      return v;
    }
    if (auto type = scalarTypeByName(name))
      return TValue::ofType(*type);
    if (const std::string *why = env->whyUnknown(name))
      return error(l, "unknown name '" + name + "': " + *why);
    return error(l, "unknown name '" + name + "'");
  }
  case K::IntLit:
    return TValue::ofConst(
        Const::ofInt(ast::rtti::cast<ast::IntLit>(&expr)->getValue()));
  case K::FloatLit:
    return TValue::ofConst(
        Const::ofFloat(ast::rtti::cast<ast::FloatLit>(&expr)->getValue()));
  case K::BoolLit:
    return TValue::ofConst(
        Const::ofBool(ast::rtti::cast<ast::BoolLit>(&expr)->getValue()));
  case K::NoneLit:
    return TValue::ofConst(Const());
  case K::StringLit:
    return error(l, "strings are only allowed in float(\"inf\"), "
                    "float(\"-inf\") and float(\"nan\")");
  case K::BinOp: {
    auto *b = ast::rtti::cast<ast::BinOp>(&expr);
    TValue lhs = genExpr(*b->getLHS());
    TValue rhs = genExpr(*b->getRHS());
    return genBinary(l, b->getOp(), lhs, rhs);
  }
  case K::UnaryOp: {
    auto *u = ast::rtti::cast<ast::UnaryOp>(&expr);
    return genUnary(l, u->getOp(), genExpr(*u->getOperand()));
  }
  case K::Compare: {
    auto *c = ast::rtti::cast<ast::Compare>(&expr);
    TValue lhs = genExpr(*c->getLHS());
    TValue rhs = genExpr(*c->getRHS());
    return genCompare(l, c->getOp(), lhs, rhs);
  }
  case K::BoolOp: {
    auto *b = ast::rtti::cast<ast::BoolOp>(&expr);
    bool isAnd = b->getOp() == ast::BoolOpKind::And;
    TValue lhs = genExpr(*b->getLHS());
    if (lhs.isInvalid())
      return TValue::invalid();
    auto isBoolScalar = [](const TValue &v) {
      return (v.isConst() && v.constant.kind == Const::Kind::Bool) ||
             (v.isValue() && v.value.getType().isInteger(1));
    };
    auto notBoolean = [&](const TValue &rhs) {
      return error(l, std::string("'") + ast::getBoolOpSpelling(b->getOp()) +
                          "' needs boolean scalars, got " + describe(lhs) +
                          " and " + describe(rhs) +
                          " (use '&' and '|' on tiles)");
    };
    // A constexpr left side decides as Python does, without the right side
    // when it settles the result: `lse is not None and ...` may use lse.
    if (lhs.isConst()) {
      bool x = lhs.constant.asDouble() != 0;
      if (x != isAnd)
        return TValue::ofConst(Const::ofBool(x));
      TValue rhs = genExpr(*b->getRHS());
      if (rhs.isInvalid())
        return TValue::invalid();
      if (rhs.isConst())
        return TValue::ofConst(Const::ofBool(rhs.constant.asDouble() != 0));
      return isBoolScalar(rhs) ? rhs : notBoolean(rhs);
    }
    TValue rhs = genExpr(*b->getRHS());
    if (rhs.isInvalid())
      return TValue::invalid();
    if (!isBoolScalar(lhs) || !isBoolScalar(rhs))
      return notBoolean(rhs);
    return genBinary(l, isAnd ? ast::BinOpKind::BitAnd : ast::BinOpKind::BitOr,
                     lhs, rhs);
  }
  case K::Call:
    return genCall(*ast::rtti::cast<ast::Call>(&expr));
  case K::Attribute:
    return error(l, "attribute '" +
                        ast::rtti::cast<ast::Attribute>(&expr)->getAttr() +
                        "' is not supported; the only method is x.to(T)");
  case K::Subscript: {
    auto *sub = ast::rtti::cast<ast::Subscript>(&expr);
    if (auto *name = ast::rtti::dyn_cast<ast::Name>(sub->getValue()))
      if (name->getName() == "ptr") {
        if (auto type = parseTypeExpr(expr))
          return TValue::ofType(*type);
        return error(l, "ptr[T] needs a scalar type T");
      }
    return genSubscript(*this, *sub);
  }
  case K::Slice:
    return error(l, "a slice is only allowed inside [...]");
  case K::Tuple: {
    std::vector<TValue> elements;
    for (const ast::ExprPtr &e :
         ast::rtti::cast<ast::Tuple>(&expr)->getElements())
      elements.push_back(genExpr(*e));
    return TValue::ofTuple(std::move(elements));
  }
  }
  return TValue::invalid();
}

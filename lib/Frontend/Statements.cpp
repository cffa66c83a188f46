//===- Statements.cpp - Statements of the DSL
//-------------------------------===//
//
// Assignments, run-time and constexpr if, range and static_range loops,
// and the names they carry out.
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
// Statements
//===----------------------------------------------------------------------===//

/// Helpers (and nested defs) take the types of their arguments at each call:
/// annotations would be ignored, so they are rejected.
void Generator::checkHelperSignature(const ast::FunctionDef &fn) {
  for (const ast::Param &p : fn.getParams())
    if (p.annotation)
      error(p.annotation->getLoc(),
            "helper parameters take no annotation: their types come from "
            "each call");
  if (const ast::Expr *ret = fn.getReturnAnnotation())
    error(ret->getLoc(), "helpers take no return annotation: their types "
                         "come from each call");
}

void Generator::genBody(const ast::StmtList &body) {
  const ast::Stmt *prev = nullptr;
  for (const ast::StmtPtr &stmt : body) {
    if (diag.shouldStop())
      return;
    if (returned) {
      // A return inside a constexpr `if` ends the function silently, as the
      // rest is what runs when the condition is false.
      if (ast::rtti::isa<ast::Return>(prev))
        error(stmt->getLoc(), "code after 'return' is never run");
      return;
    }
    genStmt(*stmt);
    prev = stmt.get();
  }
}

void Generator::genAssign(const ast::Assign &assign) {
  TValue value = genExpr(*assign.getValue());
  const auto &targets = assign.getTargets();
  if (!assign.isTupleTarget()) {
    bind(targets[0]->getName(), value);
    return;
  }
  if (value.isInvalid()) {
    for (const auto &t : targets)
      bind(t->getName(), TValue::invalid());
    return;
  }
  if (value.kind != TValue::Kind::Tuple ||
      value.elements.size() != targets.size()) {
    error(assign.getLoc(), "cannot unpack " + describe(value) + " into " +
                               std::to_string(targets.size()) + " names");
    for (const auto &t : targets)
      bind(t->getName(), TValue::invalid());
    return;
  }
  for (size_t i = 0; i < targets.size(); ++i)
    bind(targets[i]->getName(), value.elements[i]);
}

void Generator::genStmt(const ast::Stmt &stmt) {
  using K = ast::Stmt::Kind;
  switch (stmt.getKind()) {
  case K::Assign:
    return genAssign(*ast::rtti::cast<ast::Assign>(&stmt));
  case K::AugAssign: {
    auto *aug = ast::rtti::cast<ast::AugAssign>(&stmt);
    const std::string &name = aug->getTarget()->getName();
    const TValue *cur = env->lookup(name);
    if (!cur) {
      error(aug->getTarget()->getLoc(), "unknown name '" + name + "'");
      return;
    }
    TValue lhs = *cur;
    bind(name, genBinary(aug->getLoc(), aug->getOp(), lhs,
                         genExpr(*aug->getValue())));
    return;
  }
  case K::If:
    return genIf(*ast::rtti::cast<ast::If>(&stmt));
  case K::For:
    return genFor(*ast::rtti::cast<ast::For>(&stmt));
  case K::Return: {
    auto *ret = ast::rtti::cast<ast::Return>(&stmt);
    if (controlDepth > 0) {
      error(ret->getLoc(), "'return' inside a run-time 'if' or 'for' is not "
                           "supported; return at the end of the function");
      return;
    }
    returned =
        ret->getValue() ? genExpr(*ret->getValue()) : TValue::ofConst(Const());
    if (callStack.empty() && !returned->isInvalid() &&
        !(returned->isConst() && returned->constant.kind == Const::Kind::None))
      error(ret->getValue()->getLoc(), "a kernel must not return a value; "
                                       "results leave through pointers");
    return;
  }
  case K::Pass:
    return;
  case K::ExprStmt:
    genExpr(*ast::rtti::cast<ast::ExprStmt>(&stmt)->getExpr());
    return;
  case K::FunctionDef: {
    auto *fn = ast::rtti::cast<ast::FunctionDef>(&stmt);
    if (fn->getDecorator()) {
      error(fn->getDecorator()->loc, "nested functions take no decorator");
      return;
    }
    checkHelperSignature(*fn);
    TValue v;
    v.kind = TValue::Kind::Function;
    v.function = fn;
    // A nested def sees the enclosing names as they are when it is defined,
    // and itself, so that recursion is reported as such (without a closure:
    // it is only reached from its own body, where the call is rejected).
    v.closure = std::make_shared<Env>(*env);
    TValue self = v;
    self.closure = nullptr;
    v.closure->names[fn->getName()] = std::move(self);
    bind(fn->getName(), std::move(v));
    return;
  }
  }
}

static bool sameBinding(const TValue &a, const TValue &b) {
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case TValue::Kind::Value:
    return a.value == b.value;
  case TValue::Kind::Constant:
    return a.constant.kind == b.constant.kind && a.constant.i == b.constant.i &&
           (a.constant.f == b.constant.f ||
            (std::isnan(a.constant.f) && std::isnan(b.constant.f)));
  case TValue::Kind::Type:
    return a.type == b.type;
  case TValue::Kind::Function:
    return a.function == b.function;
  case TValue::Kind::Builtin:
    return a.builtin == b.builtin;
  case TValue::Kind::Invalid:
    return true;
  case TValue::Kind::Tuple:
    return false;
  }
  return false;
}

/// Sets the insertion point before `block`'s terminator, or at its end.
static void setInsertionBeforeEnd(OpBuilder &b, Block *block) {
  if (!block->empty() && block->back().hasTrait<OpTrait::IsTerminator>())
    b.setInsertionPoint(&block->back());
  else
    b.setInsertionPointToEnd(block);
}

void Generator::genIf(const ast::If &stmt) {
  TValue cond = genExpr(*stmt.getCond());
  if (cond.isInvalid())
    return;
  if (cond.isConst()) { // Resolved now: only the taken branch is emitted.
    genBody(cond.constant.asDouble() != 0 ? stmt.getThenBody()
                                          : stmt.getElseBody());
    return;
  }
  if (!cond.isValue() || !cond.value.getType().isInteger(1)) {
    error(stmt.getCond()->getLoc(),
          "an 'if' condition must be a boolean scalar, got " + describe(cond) +
              (cond.isValue() && isa<tsl::TileType>(cond.value.getType())
                   ? " (use where() to choose elementwise)"
                   : ""));
    return;
  }
  SourceLoc l = stmt.getLoc();
  std::shared_ptr<Env> before = env;
  auto thenEnv = std::make_shared<Env>(*before);
  auto elseEnv = std::make_shared<Env>(*before);
  auto ifOp = scf::IfOp::create(builder, loc(l), TypeRange{}, cond.value,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(builder);
  ++controlDepth;
  env = thenEnv;
  setInsertionBeforeEnd(builder, ifOp.thenBlock());
  genBody(stmt.getThenBody());
  env = elseEnv;
  setInsertionBeforeEnd(builder, ifOp.elseBlock());
  genBody(stmt.getElseBody());
  --controlDepth;
  env = before;

  // Names new in one branch only stay in it.
  for (auto [branch, other] :
       {std::pair(thenEnv, elseEnv), std::pair(elseEnv, thenEnv)})
    for (auto &[name, v] : branch->names)
      if (!before->names.count(name) && !other->names.count(name))
        before->leftBehind[name] =
            "it is only assigned in one branch of the run-time 'if' at "
            "line " +
            std::to_string(l.line) +
            "; assign it before the 'if' or in both branches";
  // Names changed in either branch (or new in both) leave the 'if'.
  std::vector<std::string> names;
  for (auto &[name, v] : thenEnv->names) {
    auto old = before->names.find(name);
    auto other = elseEnv->names.find(name);
    if (other == elseEnv->names.end())
      continue;
    bool changed = old == before->names.end() || !sameBinding(v, old->second) ||
                   !sameBinding(other->second, old->second);
    if (changed)
      names.push_back(name);
  }
  SmallVector<Value> thenVals, elseVals;
  SmallVector<Type> types;
  std::vector<std::string> resultNames;
  for (const std::string &name : names) {
    TValue t = thenEnv->names[name], e = elseEnv->names[name];
    if (t.isInvalid() || e.isInvalid()) {
      bind(name, TValue::invalid());
      continue;
    }
    if (sameBinding(t, e)) {
      bind(name, t);
      continue;
    }
    auto isNumeric = [](const TValue &v) {
      return v.isValue() || (v.isConst() && v.constant.isNumber());
    };
    bool ok = isNumeric(t) && isNumeric(e);
    Type hint;
    if (t.isValue())
      hint = t.value.getType();
    else if (e.isValue())
      hint = e.value.getType();
    else if (ok) // Two constants: their common type (int and float: f32).
      hint = promote(naturalType(t.constant), naturalType(e.constant));
    Value tv, ev;
    if (ok) {
      setInsertionBeforeEnd(builder, ifOp.thenBlock());
      tv = toValue(l, t, hint);
      setInsertionBeforeEnd(builder, ifOp.elseBlock());
      ev = toValue(l, e, hint);
      ok = tv && ev && tv.getType() == ev.getType();
    }
    if (!ok) {
      std::string then = describe(t), other = describe(e);
      error(l, then == other
                   ? "'" + name + "' is a different " + then +
                         " in each branch of a run-time 'if'; only values "
                         "may differ"
                   : "'" + name + "' is " + then +
                         " after the 'if' branch but " + other +
                         " after the 'else' branch");
      bind(name, TValue::invalid());
      continue;
    }
    thenVals.push_back(tv);
    elseVals.push_back(ev);
    types.push_back(tv.getType());
    resultNames.push_back(name);
  }
  if (types.empty()) {
    // Drop what is empty: the else region, or the whole op.
    auto isEmpty = [](Block *b) { return b->getOperations().size() == 1; };
    if (isEmpty(ifOp.elseBlock())) {
      if (isEmpty(ifOp.thenBlock()))
        ifOp.erase();
      else
        ifOp.elseBlock()->erase();
    }
    return;
  }
  // Rebuild the op with results now that they are known.
  builder.setInsertionPoint(ifOp);
  auto newIf = scf::IfOp::create(builder, loc(l), types, cond.value,
                                 /*withElseRegion=*/true);
  for (auto [from, to, vals] :
       {std::tuple(&ifOp.getThenRegion(), &newIf.getThenRegion(), &thenVals),
        std::tuple(&ifOp.getElseRegion(), &newIf.getElseRegion(), &elseVals)}) {
    to->front().erase();
    to->takeBody(*from);
    Block &block = to->front();
    block.back().erase(); // The empty scf.yield.
    builder.setInsertionPointToEnd(&block);
    scf::YieldOp::create(builder, loc(l), *vals);
  }
  ifOp.erase();
  for (size_t i = 0; i < resultNames.size(); ++i)
    bind(resultNames[i], TValue::ofValue(newIf.getResult(i)));
}

/// Names assigned anywhere in `body` (not inside nested defs).
static void collectAssigned(const ast::StmtList &body,
                            std::map<std::string, SourceLoc> &out) {
  for (const ast::StmtPtr &stmt : body) {
    if (auto *a = ast::rtti::dyn_cast<ast::Assign>(stmt.get()))
      for (const auto &t : a->getTargets())
        out[t->getName()] = t->getLoc();
    else if (auto *aug = ast::rtti::dyn_cast<ast::AugAssign>(stmt.get()))
      out[aug->getTarget()->getName()] = aug->getTarget()->getLoc();
    else if (auto *i = ast::rtti::dyn_cast<ast::If>(stmt.get())) {
      collectAssigned(i->getThenBody(), out);
      collectAssigned(i->getElseBody(), out);
    } else if (auto *f = ast::rtti::dyn_cast<ast::For>(stmt.get())) {
      out[f->getTarget()->getName()] = f->getTarget()->getLoc();
      collectAssigned(f->getBody(), out);
    } else if (auto *d = ast::rtti::dyn_cast<ast::FunctionDef>(stmt.get()))
      out[d->getName()] = d->getNameLoc();
  }
}

void Generator::genFor(const ast::For &stmt) {
  const ast::Call *iter = stmt.getIter();
  const std::string &callee = iter->getCalleeName();
  SourceLoc l = stmt.getLoc();
  if (callee != "range" && callee != "static_range") {
    error(iter->getLoc(), "a 'for' loop iterates over range(...) or "
                          "static_range(...)");
    return;
  }
  const auto &args = iter->getArgs();
  if (args.empty() || args.size() > 3 || !iter->getKeywords().empty()) {
    error(iter->getLoc(), callee + "() takes 1 to 3 positional arguments");
    return;
  }
  std::vector<TValue> bounds;
  std::vector<SourceLoc> boundLocs; // Implicit bounds point at the call.
  for (const ast::ExprPtr &a : args) {
    bounds.push_back(genExpr(*a));
    boundLocs.push_back(a->getLoc());
  }
  if (bounds.size() == 1) {
    bounds.insert(bounds.begin(), TValue::ofConst(Const::ofInt(0)));
    boundLocs.insert(boundLocs.begin(), iter->getLoc());
  }
  if (bounds.size() == 2) {
    bounds.push_back(TValue::ofConst(Const::ofInt(1)));
    boundLocs.push_back(iter->getLoc());
  }
  for (const TValue &b : bounds)
    if (b.isInvalid())
      return;
  const std::string &target = stmt.getTarget()->getName();

  if (callee == "static_range") {
    for (size_t i = 0; i < 3; ++i)
      if (!bounds[i].isConst() || !bounds[i].constant.isIntegral()) {
        error(boundLocs[i], "static_range bounds must be constexpr integers, "
                            "got " +
                                describe(bounds[i]));
        return;
      }
    int64_t lo = bounds[0].constant.i, hi = bounds[1].constant.i,
            step = bounds[2].constant.i;
    if (step == 0) {
      error(boundLocs[2], "static_range step must not be zero");
      return;
    }
    // In 128 bits: the bounds may be anywhere in int64.
    __int128 span = step > 0 ? __int128(hi) - lo : __int128(lo) - hi;
    __int128 stride = step > 0 ? __int128(step) : -__int128(step);
    __int128 trips = span <= 0 ? 0 : (span + stride - 1) / stride;
    if (trips > 4096) {
      error(iter->getLoc(), "static_range unrolls more than 4096 iterations "
                            "(the limit)");
      return;
    }
    for (int64_t t = 0; t < int64_t(trips); ++t) {
      bind(target, TValue::ofConst(Const::ofInt(lo + t * step)));
      genBody(stmt.getBody());
      if (diag.hasErrors() || returned)
        return;
    }
    return;
  }

  // Run-time loop: i32 induction variable unless a bound is i64.
  Type ivType = builder.getI32Type();
  for (size_t i = 0; i < 3; ++i) {
    const TValue &b = bounds[i];
    if ((b.isValue() && !isInt(b.value.getType())) ||
        (b.isConst() && !b.constant.isIntegral()) ||
        (!b.isValue() && !b.isConst())) {
      error(boundLocs[i],
            "range bounds must be integer scalars, got " + describe(b));
      return;
    }
    if ((b.isValue() && b.value.getType().isInteger(64)) ||
        (b.isConst() && b.constant.i != int32_t(b.constant.i)))
      ivType = builder.getI64Type();
  }
  if (bounds[2].isConst() && bounds[2].constant.i <= 0) {
    error(boundLocs[2], "range step must be positive (a run-time loop counts "
                        "up; use static_range to count down)");
    return;
  }
  SmallVector<Value> b3;
  for (const TValue &b : bounds)
    b3.push_back(convert(l, toValue(l, b, ivType), ivType));

  // Names assigned in the body (at their last assignment) that exist before
  // the loop are carried through it.
  std::map<std::string, SourceLoc> assigned;
  collectAssigned(stmt.getBody(), assigned);
  std::vector<std::string> carried, poisoned;
  SmallVector<Value> inits;
  for (const auto &[name, at] : assigned) {
    auto it = env->names.find(name);
    if (it == env->names.end() || name == target)
      continue;
    const TValue &v = it->second;
    if (v.isInvalid())
      continue;
    if (v.isConst() && v.constant.kind == Const::Kind::None)
      error(at, "'" + name +
                    "' is None before the loop and assigned inside it; give "
                    "it an initial value of the type it gets in the loop");
    else if (!v.isValue() && !v.isConst())
      error(at, "'" + name + "' (" + describe(v) +
                    ") cannot be reassigned inside a run-time loop");
    else if (Value init = toValue(l, v)) {
      carried.push_back(name);
      inits.push_back(init);
      continue;
    }
    poisoned.push_back(name);
  }
  auto forOp = scf::ForOp::create(builder, loc(l), b3[0], b3[1], b3[2], inits);
  std::shared_ptr<Env> before = env;
  env = std::make_shared<Env>(*before);
  Block *body = forOp.getBody();
  bind(target, TValue::ofValue(forOp.getInductionVar()));
  for (size_t i = 0; i < carried.size(); ++i)
    bind(carried[i], TValue::ofValue(forOp.getRegionIterArgs()[i]));
  for (const std::string &name : poisoned)
    bind(name, TValue::invalid());
  std::vector<bool> broken(carried.size(), false);
  {
    OpBuilder::InsertionGuard guard(builder);
    setInsertionBeforeEnd(builder, body);
    ++controlDepth;
    genBody(stmt.getBody());
    --controlDepth;
    SmallVector<Value> yields;
    for (size_t i = 0; i < carried.size(); ++i) {
      const TValue &v = env->names[carried[i]];
      Value y;
      if (v.isValue() || (v.isConst() && v.constant.isNumber()))
        y = toValue(l, v, inits[i].getType());
      if (y && y.getType() != inits[i].getType()) {
        error(assigned[carried[i]],
              "'" + carried[i] + "' changes type inside the loop, from " +
                  describe(inits[i].getType()) + " to " +
                  describe(y.getType()));
        y = {};
      } else if (!y && !v.isInvalid()) {
        error(assigned[carried[i]],
              "'" + carried[i] + "' changes type inside the loop, from " +
                  describe(inits[i].getType()) + " to " + describe(v));
      }
      // Keep the IR well formed after an error; it is never used.
      broken[i] = !y;
      yields.push_back(y ? y : forOp.getRegionIterArgs()[i]);
    }
    if (!carried.empty())
      scf::YieldOp::create(builder, loc(l), yields);
  }
  std::string line = std::to_string(l.line);
  for (auto &[name, v] : env->names)
    if (!before->names.count(name))
      before->leftBehind[name] =
          name == target
              ? "it is the variable of the run-time 'for' at line " + line +
                    ", which is not visible after the loop"
              : "it is first assigned inside the run-time 'for' at line " +
                    line +
                    ", so it stays in the loop; assign it before the loop";
  env = before;
  for (size_t i = 0; i < carried.size(); ++i)
    bind(carried[i],
         broken[i] ? TValue::invalid() : TValue::ofValue(forOp.getResult(i)));
  for (const std::string &name : poisoned)
    bind(name, TValue::invalid());
}

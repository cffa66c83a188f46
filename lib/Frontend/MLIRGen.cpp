//===- MLIRGen.cpp - Emit tessel IR from the DSL syntax tree --------------===//
//
// The emitter's entry points, diagnostics and functions (kernels and
// inlined helpers). Conversions, operators, expressions and statements have
// a file each; the built-in calls are in Builtins.cpp.
//
//===----------------------------------------------------------------------===//

#include "Frontend/Generator.h"
#include "Frontend/Imports.h"
#include "Frontend/Lexer.h"
#include "Frontend/Parser.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <set>
#include <sstream>

using namespace mlir;
using namespace ::tessel;
namespace tsl = mlir::tessel;

Generator::Generator(MLIRContext &context, DiagnosticEngine &diag,
                     const GenOptions &options)
    : context(context), diag(diag), options(options), builder(&context),
      env(std::make_shared<Env>()) {}

//===----------------------------------------------------------------------===//
// Diagnostics and locations
//===----------------------------------------------------------------------===//

TValue Generator::error(SourceLoc l, const std::string &message) {
  diag.error(l, message);
  // Errors inside an inlined helper also show where it was called from.
  for (auto it = inlineSites.rbegin(); it != inlineSites.rend(); ++it)
    diag.note(*it, "in the helper called here");
  return TValue::invalid();
}

Location Generator::loc(SourceLoc l) const {
  auto fileLoc = [&](SourceLoc s) -> Location {
    return FileLineColLoc::get(&context, diag.getSource(s.file).getFilename(),
                               s.line, s.col);
  };
  if (inlineSites.empty())
    return fileLoc(l);
  // As MLIR's inliner nests them: callsite(op at callsite(inner at outer)).
  Location caller = fileLoc(inlineSites.front());
  for (size_t i = 1; i < inlineSites.size(); ++i)
    caller = CallSiteLoc::get(fileLoc(inlineSites[i]), caller);
  return CallSiteLoc::get(fileLoc(l), caller);
}

std::string Generator::describe(Type type) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (auto ptr = dyn_cast<tsl::PtrType>(type)) {
    os << "ptr[" << describe(ptr.getPointeeType()) << "]";
  } else if (auto tile = dyn_cast<tsl::TileType>(type)) {
    os << "tile<";
    for (int64_t d : tile.getShape())
      os << d << "x";
    os << describe(tile.getElementType()) << ">";
  } else if (auto st = dyn_cast<tsl::SoftmaxStateType>(type)) {
    os << "softmax_state<" << st.getRows() << "x" << st.getCols() << ">";
  } else if (auto st = dyn_cast<tsl::KLStateType>(type)) {
    os << "kl_state<" << st.getRows() << ">";
  } else if (auto desc = dyn_cast<tsl::TensorDescType>(type)) {
    os << "tensor_desc<";
    for (int64_t d : desc.getBlockShape())
      os << d << "x";
    os << describe(desc.getElementType()) << ">";
  } else {
    os << type;
  }
  return out;
}

std::string Generator::describe(const TValue &v) const {
  switch (v.kind) {
  case TValue::Kind::Invalid:
    return "<error>";
  case TValue::Kind::Constant:
    switch (v.constant.kind) {
    case Const::Kind::Int:
      return "constexpr int " + std::to_string(v.constant.i);
    case Const::Kind::Float: {
      std::ostringstream os;
      os << "constexpr float " << v.constant.f;
      return os.str();
    }
    case Const::Kind::Bool:
      return v.constant.i ? "constexpr True" : "constexpr False";
    case Const::Kind::None:
      return "None";
    }
    return "constexpr";
  case TValue::Kind::Value:
    return describe(v.value.getType());
  case TValue::Kind::Type:
    return "type " + describe(v.type);
  case TValue::Kind::Function:
    return "function '" + v.function->getName() + "'";
  case TValue::Kind::Builtin:
    return "built-in '" + v.builtin + "'";
  case TValue::Kind::Tuple:
    return "tuple of " + std::to_string(v.elements.size());
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Functions
//===----------------------------------------------------------------------===//

TValue Generator::callFunction(SourceLoc l, const TValue &callee,
                               std::vector<TValue> args, SourceLoc callLoc) {
  const ast::FunctionDef *fn = callee.function;
  if (llvm::is_contained(callStack, fn))
    return error(l, "recursive call to '" + fn->getName() +
                        "': helpers are inlined, so recursion is not "
                        "supported");
  const auto &params = fn->getParams();
  if (args.size() > params.size())
    return error(l, "'" + fn->getName() + "' takes " +
                        pluralize(params.size(), "argument") + ", got " +
                        std::to_string(args.size()));
  auto callEnv = std::make_shared<Env>();
  callEnv->parent = callee.closure;
  // Defaults are evaluated in the callee's scope, and names it calls are
  // those of the file that defines it (an imported helper's own file).
  std::shared_ptr<Env> saved = env;
  const ast::Module *savedModule = module;
  env = callEnv;
  if (fn->getOwner())
    module = fn->getOwner();
  for (size_t i = 0; i < params.size(); ++i) {
    if (i < args.size() && !args[i].isInvalid() &&
        !(args[i].isConst() && args[i].constant.kind == Const::Kind::None &&
          params[i].defaultValue)) {
      bind(params[i].name, args[i]);
    } else if (i < args.size() && args[i].isInvalid()) {
      bind(params[i].name, args[i]);
    } else if (params[i].defaultValue) {
      bind(params[i].name, genExpr(*params[i].defaultValue));
    } else {
      env = saved;
      module = savedModule;
      return error(l, "'" + fn->getName() + "' is missing argument '" +
                          params[i].name + "'");
    }
  }
  std::optional<TValue> savedReturn = returned;
  unsigned savedDepth = controlDepth;
  returned.reset();
  controlDepth = 0;
  callStack.push_back(fn);
  inlineSites.push_back(callLoc);
  genBody(fn->getBody());
  inlineSites.pop_back();
  callStack.pop_back();
  TValue result = returned.value_or(TValue::ofConst(Const()));
  returned = savedReturn;
  controlDepth = savedDepth;
  env = saved;
  module = savedModule;
  return result;
}

static std::optional<TValue> parseDefine(Generator &g,
                                         const std::string &text) {
  if (text == "True" || text == "False")
    return TValue::ofConst(Const::ofBool(text == "True"));
  if (auto type = g.scalarTypeByName(text))
    return TValue::ofType(*type);
  if (text.empty())
    return std::nullopt;
  char *end = nullptr;
  long long i = std::strtoll(text.c_str(), &end, 0);
  if (end && *end == '\0')
    return TValue::ofConst(Const::ofInt(i));
  double f = std::strtod(text.c_str(), &end);
  if (end && *end == '\0')
    return TValue::ofConst(Const::ofFloat(f));
  return std::nullopt;
}

/// Names a kernel's parameters cannot have: a bundle's launch expressions
/// use them for the grid and the number of CTAs (docs/bundle.md), so the
/// runtime refuses a bundle whose kernel has such a parameter or constant.
static bool isReservedParamName(StringRef name) {
  return llvm::is_contained({"grid_x", "grid_y", "grid_z", "num_ctas"}, name);
}

static void genKernel(Generator &g, const ast::FunctionDef &fn) {
  g.env = std::make_shared<Env>();
  g.returned.reset();
  g.controlDepth = 0;
  OpBuilder &b = g.builder;
  for (const ast::Param &p : fn.getParams())
    if (isReservedParamName(p.name))
      g.error(p.loc, "kernel parameter '" + p.name +
                         "' has a name the launch reserves (grid_x, grid_y, "
                         "grid_z and num_ctas name the grid in a bundle); "
                         "rename it");
  // constexpr parameters first: annotations of the others may use them.
  NamedAttrList constants;
  for (const ast::Param &p : fn.getParams()) {
    auto *ann = ast::rtti::dyn_cast<ast::Name>(p.annotation.get());
    if (!ann || ann->getName() != "constexpr")
      continue;
    std::optional<TValue> value;
    auto def = g.options.defines.find(p.name);
    if (def != g.options.defines.end()) {
      value = parseDefine(g, def->second);
      if (!value) {
        g.error(p.loc, "-D " + p.name + "=" + def->second +
                           ": expected an integer, a float, True, False or "
                           "a type name");
        value = TValue::invalid();
      }
    } else if (p.defaultValue) {
      value = g.genExpr(*p.defaultValue);
      if (!value->isInvalid() && !value->isConst() &&
          value->kind != TValue::Kind::Type) {
        g.error(p.defaultValue->getLoc(),
                "the default of constexpr '" + p.name +
                    "' must be a constexpr value, got " + g.describe(*value));
        value = TValue::invalid();
      }
    } else {
      g.error(p.loc, "constexpr parameter '" + p.name +
                         "' has no value: give it a default or pass -D " +
                         p.name + "=VALUE");
      value = TValue::invalid();
    }
    if (value->isConst())
      constants.append(p.name,
                       value->constant.kind == Const::Kind::Float
                           ? Attribute(b.getF64FloatAttr(value->constant.f))
                       : value->constant.kind == Const::Kind::Bool
                           ? Attribute(b.getBoolAttr(value->constant.i))
                           : Attribute(b.getI64IntegerAttr(value->constant.i)));
    else if (value->kind == TValue::Kind::Type)
      constants.append(p.name, TypeAttr::get(value->type));
    g.bind(p.name, *value);
  }
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  std::vector<const ast::Param *> runtime;
  // Pointer parameters compiled as None: kept in the signature (launches
  // pass a null pointer), the constant None in the body.
  std::set<std::string> noneParams;
  for (const ast::Param &p : fn.getParams()) {
    auto *ann = ast::rtti::dyn_cast<ast::Name>(p.annotation.get());
    if (ann && ann->getName() == "constexpr")
      continue;
    std::optional<Type> type;
    if (p.annotation)
      type = g.parseTypeExpr(*p.annotation);
    if (!type) {
      g.error(p.annotation ? p.annotation->getLoc() : p.loc,
              "kernel parameter '" + p.name +
                  "' needs a type: a scalar type (i32, f32, ...), ptr[T] "
                  "or constexpr");
      continue;
    }
    if (p.defaultValue)
      g.error(p.defaultValue->getLoc(),
              "only constexpr parameters take defaults");
    auto def = g.options.defines.find(p.name);
    if (def != g.options.defines.end()) {
      if (def->second != "None")
        g.error(p.loc, "-D " + p.name + "=" + def->second + ": '" + p.name +
                           "' is a runtime parameter; a pointer parameter "
                           "takes only None (compiled without its buffer)");
      else if (!isa<tsl::PtrType>(*type))
        g.error(p.loc, "'" + p.name +
                           "' given as None: only a pointer "
                           "parameter can be None (compiled without its "
                           "buffer), and '" +
                           p.name + "' is " + Generator::describe(*type));
      else
        noneParams.insert(p.name);
    }
    argTypes.push_back(*type);
    argLocs.push_back(NameLoc::get(b.getStringAttr(p.name), g.loc(p.loc)));
    runtime.push_back(&p);
  }
  if (const ast::Expr *ret = fn.getReturnAnnotation())
    g.error(ret->getLoc(), "a kernel returns nothing; remove the '->' "
                           "annotation");
  int64_t numWarps = 4;
  std::optional<int64_t> numStages;
  bool warpSpecialize = false, pingPong = false;
  for (const ast::Keyword &kw : fn.getDecorator()->keywords) {
    if (kw.name != "num_warps" && kw.name != "num_stages" &&
        kw.name != "warp_specialize" && kw.name != "ping_pong") {
      g.error(kw.loc, "unknown @kernel option '" + kw.name +
                          "' (the options are num_warps, num_stages, "
                          "warp_specialize and ping_pong)");
      continue;
    }
    std::optional<int64_t> n = g.genConstInt(*kw.value, kw.name);
    if (!n)
      continue;
    if (kw.name == "warp_specialize" || kw.name == "ping_pong") {
      if (*n != 0 && *n != 1)
        g.error(kw.value->getLoc(),
                kw.name + " must be True or False, got " + std::to_string(*n));
      (kw.name == "ping_pong" ? pingPong : warpSpecialize) = *n == 1;
    } else if (kw.name == "num_stages") {
      if (*n < 1 || *n > 8)
        g.error(kw.value->getLoc(),
                "num_stages must be in [1, 8], got " + std::to_string(*n));
      else
        numStages = *n;
    } else if (*n < 1 || *n > 32 || (*n & (*n - 1))) {
      g.error(kw.value->getLoc(), "num_warps must be a power of two in "
                                  "[1, 32], got " +
                                      std::to_string(*n));
    } else {
      numWarps = *n;
    }
  }
  if (argTypes.size() != runtime.size())
    return;
  auto func = func::FuncOp::create(b, g.loc(fn.getNameLoc()), fn.getName(),
                                   b.getFunctionType(argTypes, {}));
  func->setAttr(tsl::TesselDialect::getKernelAttrName(), b.getUnitAttr());
  func->setAttr(tsl::TesselDialect::getNumWarpsAttrName(),
                b.getI32IntegerAttr(numWarps));
  if (numStages)
    func->setAttr(tsl::TesselDialect::getNumStagesAttrName(),
                  b.getI32IntegerAttr(*numStages));
  if (warpSpecialize)
    func->setAttr(tsl::TesselDialect::getWarpSpecializeAttrName(),
                  b.getUnitAttr());
  if (pingPong)
    func->setAttr(tsl::TesselDialect::getPingPongAttrName(), b.getUnitAttr());
  if (!constants.empty())
    func->setAttr(tsl::TesselDialect::getConstantsAttrName(),
                  constants.getDictionary(&g.context));
  Block *entry = func.addEntryBlock();
  for (size_t i = 0; i < runtime.size(); ++i) {
    entry->getArgument(i).setLoc(argLocs[i]);
    if (noneParams.count(runtime[i]->name)) {
      func.setArgAttr(i, tsl::TesselDialect::getNoneAttrName(),
                      b.getUnitAttr());
      g.bind(runtime[i]->name, TValue::ofConst(Const()));
    } else {
      g.bind(runtime[i]->name, TValue::ofValue(entry->getArgument(i)));
    }
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  g.genBody(fn.getBody());
  func::ReturnOp::create(b, g.loc(fn.getLoc()));
}

OwningOpRef<ModuleOp> Generator::run(const ast::Module &m) {
  module = &m;
  // Owned from the start so that a failed compile frees what was built.
  OwningOpRef<ModuleOp> mod = ModuleOp::create(FileLineColLoc::get(
      &context, diag.getSourceManager().getFilename(), 1, 1));
  builder.setInsertionPointToEnd(mod->getBody());
  bool found = options.kernel.empty();
  std::set<std::string> paramNames;
  std::map<std::string, SourceLoc> defined;
  for (const auto &fn : m.getFunctions()) {
    auto [first, isNew] = defined.emplace(fn->getName(), fn->getNameLoc());
    if (!isNew) {
      error(fn->getNameLoc(), "'" + fn->getName() +
                                  "' is already defined at line " +
                                  std::to_string(first->second.line));
      continue;
    }
    const ast::Decorator *dec = fn->getDecorator();
    if (!dec) {
      error(fn->getLoc(),
            "function '" + fn->getName() + "' needs @kernel or @func");
      continue;
    }
    if (dec->name == "func") {
      if (!dec->keywords.empty())
        error(dec->loc, "@func takes no options");
      checkHelperSignature(*fn);
      continue;
    }
    if (dec->name != "kernel") {
      error(dec->loc, "unknown decorator '@" + dec->name +
                          "' (expected @kernel or @func)");
      continue;
    }
    if (!options.kernel.empty() && fn->getName() != options.kernel)
      continue;
    found = true;
    genKernel(*this, *fn);
    // genKernel explains a -D of a runtime parameter.
    for (const ast::Param &p : fn->getParams())
      paramNames.insert(p.name);
  }
  // The helpers imported here or by the files imported from, each once.
  std::set<const ast::FunctionDef *> checked;
  std::vector<const ast::Module *> pending{&m};
  while (!pending.empty()) {
    const ast::Module *from = pending.back();
    pending.pop_back();
    for (const auto &[name, fn] : from->getImported())
      if (checked.insert(fn).second) {
        checkHelperSignature(*fn);
        pending.push_back(fn->getOwner());
      }
  }
  if (!found)
    error(SourceLoc{1, 1}, "no kernel named '" + options.kernel + "'");
  // A misspelt -D would otherwise be ignored silently.
  for (const auto &[name, value] : options.defines)
    if (found && !paramNames.count(name))
      error(SourceLoc{}, "-D " + name + "=" + value +
                             ": no kernel compiled here has a constexpr "
                             "(or pointer) parameter '" +
                             name + "'");
  if (diag.hasErrors())
    return nullptr;
  if (failed(verify(*mod)))
    return nullptr;
  return mod;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// The first file:line:col inside `loc` (fused and named locations nest).
static SourceLoc sourceLocOf(Location loc,
                             const ::tessel::DiagnosticEngine &diag) {
  SourceLoc at;
  loc->walk([&](Location l) {
    if (auto file = dyn_cast<FileLineColLoc>(l)) {
      at = {file.getLine(), file.getColumn(),
            diag.getFileId(file.getFilename().getValue())};
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return at;
}

namespace tessel {
DSLDiagnosticHandler::DSLDiagnosticHandler(MLIRContext &context,
                                           DiagnosticEngine &diag,
                                           std::string prefix)
    : ScopedDiagnosticHandler(&context, [&diag, prefix](mlir::Diagnostic &d) {
        diag.error(sourceLocOf(d.getLocation(), diag), prefix + d.str());
        for (const mlir::Diagnostic &note : d.getNotes())
          diag.note(sourceLocOf(note.getLocation(), diag), note.str());
        return success();
      }) {}

void loadFrontendDialects(MLIRContext &context) {
  context.loadDialect<tsl::TesselDialect, arith::ArithDialect,
                      math::MathDialect, scf::SCFDialect, func::FuncDialect>();
}

OwningOpRef<ModuleOp> mlirGen(MLIRContext &context, const ast::Module &module,
                              DiagnosticEngine &diag,
                              const GenOptions &options) {
  loadFrontendDialects(context);
  Generator gen(context, diag, options);
  return gen.run(module);
}

OwningOpRef<ModuleOp> compileSource(MLIRContext &context,
                                    const SourceManager &source,
                                    DiagnosticEngine &diag,
                                    const GenOptions &options) {
  // Anything MLIR itself reports (a verifier failure) is a compiler bug; it
  // still reaches the user in the DSL's own format, at the DSL location.
  DSLDiagnosticHandler handler(context, diag, "internal compiler error: ");
  Lexer lexer(source, diag);
  Parser parser(lexer, diag);
  std::unique_ptr<ast::Module> module = parser.parseModule();
  if (!module || diag.hasErrors())
    return nullptr;
  ImportResolver imports(diag);
  if (!imports.resolve(*module, diag.getFileId(source)))
    return nullptr;
  return mlirGen(context, *module, diag, options);
}
} // namespace tessel

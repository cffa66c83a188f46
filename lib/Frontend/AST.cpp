//===- AST.cpp - Syntax tree of the Tessel DSL ----------------------------===//

#include "Frontend/AST.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

using namespace tessel;
using namespace tessel::ast;
using namespace tessel::ast::rtti;

const char *ast::getBinOpSpelling(BinOpKind op) {
  switch (op) {
  // clang-format off
  case BinOpKind::Add: return "+";
  case BinOpKind::Sub: return "-";
  case BinOpKind::Mul: return "*";
  case BinOpKind::Div: return "/";
  case BinOpKind::FloorDiv: return "//";
  case BinOpKind::Mod: return "%";
  case BinOpKind::Pow: return "**";
  case BinOpKind::BitAnd: return "&";
  case BinOpKind::BitOr: return "|";
  case BinOpKind::BitXor: return "^";
  case BinOpKind::LShift: return "<<";
  case BinOpKind::RShift: return ">>";
    // clang-format on
  }
  return "?";
}

const char *ast::getUnaryOpSpelling(UnaryOpKind op) {
  switch (op) {
  case UnaryOpKind::Neg:
    return "-";
  case UnaryOpKind::Pos:
    return "+";
  case UnaryOpKind::Invert:
    return "~";
  case UnaryOpKind::Not:
    return "not";
  }
  return "?";
}

const char *ast::getCmpOpSpelling(CmpOpKind op) {
  switch (op) {
  // clang-format off
  case CmpOpKind::Lt: return "<";
  case CmpOpKind::Le: return "<=";
  case CmpOpKind::Gt: return ">";
  case CmpOpKind::Ge: return ">=";
  case CmpOpKind::Eq: return "==";
  case CmpOpKind::Ne: return "!=";
  case CmpOpKind::Is: return "is";
  case CmpOpKind::IsNot: return "is not";
    // clang-format on
  }
  return "?";
}

const char *ast::getBoolOpSpelling(BoolOpKind op) {
  return op == BoolOpKind::And ? "and" : "or";
}

const std::string &Call::getCalleeName() const {
  static const std::string empty;
  if (const auto *name = dyn_cast<Name>(callee.get()))
    return name->getName();
  return empty;
}

const Keyword *Call::findKeyword(const std::string &name) const {
  for (const Keyword &kw : keywords)
    if (kw.name == name)
      return &kw;
  return nullptr;
}

Module::Module(std::vector<std::unique_ptr<FunctionDef>> functions,
               std::vector<Import> imports)
    : functions(std::move(functions)), imports(std::move(imports)) {
  for (const auto &fn : this->functions)
    fn->setOwner(this);
}

const FunctionDef *Module::lookupDefined(const std::string &name) const {
  for (const auto &fn : functions)
    if (fn->getName() == name)
      return fn.get();
  return nullptr;
}

const FunctionDef *Module::lookup(const std::string &name) const {
  if (const FunctionDef *fn = lookupDefined(name))
    return fn;
  auto it = imported.find(name);
  return it == imported.end() ? nullptr : it->second;
}

/// Shortest spelling that reads back as the same double, like Python's repr.
static std::string formatFloat(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, value);
    if (std::strtod(buf, nullptr) == value)
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

static std::string quote(const std::string &value) {
  std::string out = "\"";
  for (char c : value) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

//===----------------------------------------------------------------------===//
// formatExpr
//===----------------------------------------------------------------------===//

static std::string formatList(const ExprList &list) {
  std::string out;
  for (size_t i = 0; i < list.size(); ++i)
    out += (i ? ", " : "") + formatExpr(*list[i]);
  return out;
}

static std::string formatBinary(const Expr *lhs, const char *op,
                                const Expr *rhs) {
  return "(" + formatExpr(*lhs) + " " + op + " " + formatExpr(*rhs) + ")";
}

static std::string formatCall(const Call &call) {
  std::string out =
      formatExpr(*call.getCallee()) + "(" + formatList(call.getArgs());
  bool first = call.getArgs().empty();
  for (const Keyword &kw : call.getKeywords()) {
    out += (first ? "" : ", ") + kw.name + "=" + formatExpr(*kw.value);
    first = false;
  }
  return out + ")";
}

std::string ast::formatExpr(const Expr &expr) {
  switch (expr.getKind()) {
  case Expr::Kind::Name:
    return cast<Name>(&expr)->getName();
  case Expr::Kind::IntLit:
    return std::to_string(cast<IntLit>(&expr)->getValue());
  case Expr::Kind::FloatLit:
    return formatFloat(cast<FloatLit>(&expr)->getValue());
  case Expr::Kind::BoolLit:
    return cast<BoolLit>(&expr)->getValue() ? "True" : "False";
  case Expr::Kind::NoneLit:
    return "None";
  case Expr::Kind::StringLit:
    return quote(cast<StringLit>(&expr)->getValue());
  case Expr::Kind::BinOp: {
    const auto *e = cast<BinOp>(&expr);
    return formatBinary(e->getLHS(), getBinOpSpelling(e->getOp()), e->getRHS());
  }
  case Expr::Kind::UnaryOp: {
    const auto *e = cast<UnaryOp>(&expr);
    const char *sep = e->getOp() == UnaryOpKind::Not ? " " : "";
    return std::string("(") + getUnaryOpSpelling(e->getOp()) + sep +
           formatExpr(*e->getOperand()) + ")";
  }
  case Expr::Kind::Compare: {
    const auto *e = cast<Compare>(&expr);
    return formatBinary(e->getLHS(), getCmpOpSpelling(e->getOp()), e->getRHS());
  }
  case Expr::Kind::BoolOp: {
    const auto *e = cast<BoolOp>(&expr);
    return formatBinary(e->getLHS(), getBoolOpSpelling(e->getOp()),
                        e->getRHS());
  }
  case Expr::Kind::Call:
    return formatCall(*cast<Call>(&expr));
  case Expr::Kind::Attribute: {
    const auto *e = cast<Attribute>(&expr);
    return formatExpr(*e->getValue()) + "." + e->getAttr();
  }
  case Expr::Kind::Subscript: {
    const auto *e = cast<Subscript>(&expr);
    return formatExpr(*e->getValue()) + "[" + formatList(e->getIndices()) + "]";
  }
  case Expr::Kind::Slice: {
    const auto *e = cast<Slice>(&expr);
    return (e->getLower() ? formatExpr(*e->getLower()) : "") + ":" +
           (e->getUpper() ? formatExpr(*e->getUpper()) : "");
  }
  case Expr::Kind::Tuple: {
    const auto &elts = cast<Tuple>(&expr)->getElements();
    return "(" + formatList(elts) + (elts.size() == 1 ? ",)" : ")");
  }
  }
  return "<?>";
}

//===----------------------------------------------------------------------===//
// Indented dump
//===----------------------------------------------------------------------===//

namespace {
class Dumper {
public:
  Dumper(std::ostream &os, bool withLocs) : os(os), withLocs(withLocs) {}

  void dumpModule(const Module &module);
  void dumpStmt(const Stmt &stmt, unsigned indent);
  void dumpExpr(const Expr &expr, unsigned indent);

private:
  void line(unsigned indent, const std::string &text,
            SourceLoc loc = SourceLoc());
  void dumpBody(const char *label, const StmtList &body, unsigned indent);
  void dumpKeywords(const std::vector<Keyword> &keywords, unsigned indent);
  void dumpLabelled(const char *label, const Expr *expr, unsigned indent);
  void dumpFunction(const FunctionDef &fn, unsigned indent);
  void dumpExprChildren(const Expr &expr, unsigned indent);

  std::ostream &os;
  bool withLocs;
};
} // namespace

void Dumper::line(unsigned indent, const std::string &text, SourceLoc loc) {
  os << std::string(2 * indent, ' ') << text;
  if (withLocs && loc.isValid())
    os << " @" << loc.line << ":" << loc.col;
  os << "\n";
}

void Dumper::dumpModule(const Module &module) {
  line(0, "Module");
  for (const auto &fn : module.getFunctions())
    dumpStmt(*fn, 1);
}

void Dumper::dumpBody(const char *label, const StmtList &body,
                      unsigned indent) {
  line(indent, label);
  for (const auto &stmt : body)
    dumpStmt(*stmt, indent + 1);
}

void Dumper::dumpKeywords(const std::vector<Keyword> &keywords,
                          unsigned indent) {
  for (const Keyword &kw : keywords) {
    line(indent, "Keyword " + kw.name, kw.loc);
    dumpExpr(*kw.value, indent + 1);
  }
}

void Dumper::dumpLabelled(const char *label, const Expr *expr,
                          unsigned indent) {
  if (!expr)
    return;
  line(indent, label);
  dumpExpr(*expr, indent + 1);
}

void Dumper::dumpFunction(const FunctionDef &fn, unsigned indent) {
  line(indent, "FunctionDef " + fn.getName() + (fn.isNested() ? " nested" : ""),
       fn.getLoc());
  if (const Decorator *dec = fn.getDecorator()) {
    line(indent + 1, "Decorator " + dec->name, dec->loc);
    dumpKeywords(dec->keywords, indent + 2);
  }
  for (const Param &param : fn.getParams()) {
    line(indent + 1, "Param " + param.name, param.loc);
    dumpLabelled("Annotation", param.annotation.get(), indent + 2);
    dumpLabelled("Default", param.defaultValue.get(), indent + 2);
  }
  dumpLabelled("Returns", fn.getReturnAnnotation(), indent + 1);
  dumpBody("Body", fn.getBody(), indent + 1);
}

static std::string targetList(const Assign &assign) {
  std::string out;
  for (size_t i = 0; i < assign.getTargets().size(); ++i)
    out += (i ? ", " : "") + assign.getTargets()[i]->getName();
  if (!assign.isTupleTarget())
    return out;
  return "(" + out + (assign.getTargets().size() == 1 ? ",)" : ")");
}

void Dumper::dumpStmt(const Stmt &stmt, unsigned indent) {
  SourceLoc loc = stmt.getLoc();
  switch (stmt.getKind()) {
  case Stmt::Kind::Assign: {
    const auto *s = cast<Assign>(&stmt);
    line(indent, "Assign " + targetList(*s), loc);
    dumpExpr(*s->getValue(), indent + 1);
    return;
  }
  case Stmt::Kind::AugAssign: {
    const auto *s = cast<AugAssign>(&stmt);
    line(indent,
         "AugAssign " + s->getTarget()->getName() + " " +
             getBinOpSpelling(s->getOp()) + "=",
         loc);
    dumpExpr(*s->getValue(), indent + 1);
    return;
  }
  case Stmt::Kind::If: {
    const auto *s = cast<If>(&stmt);
    line(indent, "If", loc);
    dumpExpr(*s->getCond(), indent + 1);
    dumpBody("Then", s->getThenBody(), indent + 1);
    if (!s->getElseBody().empty())
      dumpBody("Else", s->getElseBody(), indent + 1);
    return;
  }
  case Stmt::Kind::For: {
    const auto *s = cast<For>(&stmt);
    line(indent, "For " + s->getTarget()->getName(), loc);
    dumpExpr(*s->getIter(), indent + 1);
    dumpBody("Body", s->getBody(), indent + 1);
    return;
  }
  case Stmt::Kind::Return: {
    const auto *s = cast<Return>(&stmt);
    line(indent, "Return", loc);
    if (s->getValue())
      dumpExpr(*s->getValue(), indent + 1);
    return;
  }
  case Stmt::Kind::Pass:
    line(indent, "Pass", loc);
    return;
  case Stmt::Kind::ExprStmt:
    line(indent, "ExprStmt", loc);
    dumpExpr(*cast<ExprStmt>(&stmt)->getExpr(), indent + 1);
    return;
  case Stmt::Kind::FunctionDef:
    dumpFunction(*cast<FunctionDef>(&stmt), indent);
    return;
  }
}

void Dumper::dumpExpr(const Expr &expr, unsigned indent) {
  SourceLoc loc = expr.getLoc();
  switch (expr.getKind()) {
  case Expr::Kind::Name:
  case Expr::Kind::IntLit:
  case Expr::Kind::FloatLit:
  case Expr::Kind::BoolLit:
  case Expr::Kind::NoneLit:
  case Expr::Kind::StringLit: {
    static const char *names[] = {"Name",    "IntLit",  "FloatLit",
                                  "BoolLit", "NoneLit", "StringLit"};
    std::string text = names[static_cast<int>(expr.getKind())];
    if (!isa<NoneLit>(&expr))
      text += " " + formatExpr(expr);
    line(indent, text, loc);
    return;
  }
  case Expr::Kind::BinOp:
    line(indent,
         std::string("BinOp ") + getBinOpSpelling(cast<BinOp>(&expr)->getOp()),
         loc);
    break;
  case Expr::Kind::UnaryOp:
    line(indent,
         std::string("UnaryOp ") +
             getUnaryOpSpelling(cast<UnaryOp>(&expr)->getOp()),
         loc);
    break;
  case Expr::Kind::Compare:
    line(indent,
         std::string("Compare ") +
             getCmpOpSpelling(cast<Compare>(&expr)->getOp()),
         loc);
    break;
  case Expr::Kind::BoolOp:
    line(indent,
         std::string("BoolOp ") +
             getBoolOpSpelling(cast<BoolOp>(&expr)->getOp()),
         loc);
    break;
  case Expr::Kind::Call:
    line(indent, "Call", loc);
    break;
  case Expr::Kind::Attribute:
    line(indent, "Attribute " + cast<Attribute>(&expr)->getAttr(), loc);
    break;
  case Expr::Kind::Subscript:
    line(indent, "Subscript", loc);
    break;
  case Expr::Kind::Slice:
    line(indent, "Slice", loc);
    break;
  case Expr::Kind::Tuple:
    line(indent, "Tuple", loc);
    break;
  }
  dumpExprChildren(expr, indent + 1);
}

void Dumper::dumpExprChildren(const Expr &expr, unsigned indent) {
  if (const auto *e = dyn_cast<BinOp>(&expr)) {
    dumpExpr(*e->getLHS(), indent);
    dumpExpr(*e->getRHS(), indent);
  } else if (const auto *e = dyn_cast<UnaryOp>(&expr)) {
    dumpExpr(*e->getOperand(), indent);
  } else if (const auto *e = dyn_cast<Compare>(&expr)) {
    dumpExpr(*e->getLHS(), indent);
    dumpExpr(*e->getRHS(), indent);
  } else if (const auto *e = dyn_cast<BoolOp>(&expr)) {
    dumpExpr(*e->getLHS(), indent);
    dumpExpr(*e->getRHS(), indent);
  } else if (const auto *e = dyn_cast<Call>(&expr)) {
    dumpExpr(*e->getCallee(), indent);
    for (const auto &arg : e->getArgs())
      dumpExpr(*arg, indent);
    dumpKeywords(e->getKeywords(), indent);
  } else if (const auto *e = dyn_cast<Attribute>(&expr)) {
    dumpExpr(*e->getValue(), indent);
  } else if (const auto *e = dyn_cast<Subscript>(&expr)) {
    dumpExpr(*e->getValue(), indent);
    for (const auto &index : e->getIndices())
      dumpExpr(*index, indent);
  } else if (const auto *e = dyn_cast<Slice>(&expr)) {
    dumpLabelled("Lower", e->getLower(), indent);
    dumpLabelled("Upper", e->getUpper(), indent);
  } else if (const auto *e = dyn_cast<Tuple>(&expr)) {
    for (const auto &elt : e->getElements())
      dumpExpr(*elt, indent);
  }
}

void ast::dump(const Module &module, std::ostream &os, bool withLocs) {
  Dumper(os, withLocs).dumpModule(module);
}

void ast::dump(const Stmt &stmt, std::ostream &os, bool withLocs) {
  Dumper(os, withLocs).dumpStmt(stmt, 0);
}

void ast::dump(const Expr &expr, std::ostream &os, bool withLocs) {
  Dumper(os, withLocs).dumpExpr(expr, 0);
}

std::string ast::dumpToString(const Module &module, bool withLocs) {
  std::ostringstream os;
  dump(module, os, withLocs);
  return os.str();
}

//===- Parser.cpp - Recursive-descent parser for the Tessel DSL -----------===//
//
// Conventions: a parse function that fails returns null (or false) after
// reporting one error (or leaving it to the lexer, see flushDeferredError);
// its callers propagate the failure without reporting more. Statement loops
// then skip to the end of the line.
//
//===----------------------------------------------------------------------===//

#include "Frontend/Parser.h"

#include <algorithm>
#include <string>

using namespace tessel;
using namespace tessel::ast;
using namespace tessel::ast::rtti;

/// Counts recursion (and left-nested operator chains) against kMaxDepth.
class Parser::Nesting {
public:
  explicit Nesting(Parser &parser) : parser(parser) { add(); }
  ~Nesting() { parser.depth -= count; }
  void add() {
    ++parser.depth;
    ++count;
  }

private:
  Parser &parser;
  unsigned count = 0;
};

Parser::Parser(Lexer &lexer, DiagnosticEngine &diag)
    : lexer(lexer), diag(diag) {}

std::unique_ptr<Module> tessel::parseSource(const SourceManager &sm,
                                            DiagnosticEngine &diag) {
  Lexer lexer(sm, diag);
  return Parser(lexer, diag).parseModule();
}

//===----------------------------------------------------------------------===//
// Token stream and recovery
//===----------------------------------------------------------------------===//

const Token &Parser::tokenAt(size_t i) {
  while (tokens.size() <= i &&
         (tokens.empty() || !tokens.back().is(TokenKind::Eof)))
    tokens.push_back(lexer.lex());
  return i < tokens.size() ? tokens[i] : tokens.back();
}

void Parser::consume() {
  if (!is(TokenKind::Eof))
    ++index;
}

bool Parser::consumeIf(TokenKind kind) {
  if (!is(kind))
    return false;
  consume();
  return true;
}

bool Parser::expect(TokenKind kind, std::string_view context) {
  if (consumeIf(kind))
    return true;
  std::string what = std::string("'") + getTokenKindName(kind) + "'";
  if (!context.empty())
    what += " " + std::string(context);
  errorExpected(what);
  return false;
}

void Parser::error(SourceLoc loc, std::string_view message) {
  diag.error(loc, message);
}

void Parser::errorExpected(std::string_view what) {
  const Token &tok = cur();
  // An Error token was already explained by the lexer.
  if (tok.is(TokenKind::Error))
    return;
  std::string message =
      "expected " + std::string(what) + ", found " + tok.describe();
  if (!tok.inBrackets) {
    diag.error(tok.loc, message);
    return;
  }
  if (!deferred) {
    deferred = Diagnostic{Severity::Error, tok.loc, message};
    unclosedBeforeDeferred = lexer.getNumUnclosedBrackets();
  }
}

/// Called once the failed statement's line has been skipped.
void Parser::flushDeferredError() {
  if (!deferred)
    return;
  if (lexer.getNumUnclosedBrackets() == unclosedBeforeDeferred)
    diag.error(deferred->loc, deferred->message);
  deferred.reset();
}

bool Parser::checkDepth(SourceLoc loc) {
  if (depth <= kMaxDepth)
    return true;
  error(loc, "nesting too deep (more than " + std::to_string(kMaxDepth) +
                 " levels)");
  return false;
}

/// After a failed statement: skip the rest of its line, unless the failure
/// came right after a line end (say, a missing indented block).
void Parser::synchronize(size_t stmtStart) {
  if (index > stmtStart && (tokens[index - 1].is(TokenKind::Newline) ||
                            tokens[index - 1].is(TokenKind::Dedent)))
    return;
  skipLine();
}

void Parser::skipLine() {
  while (!is(TokenKind::Newline) && !is(TokenKind::Eof))
    consume();
  consumeIf(TokenKind::Newline);
}

/// Skips an INDENT ... DEDENT run without recursion.
void Parser::skipIndentedBlock() {
  unsigned level = 0;
  do {
    if (is(TokenKind::Indent))
      ++level;
    else if (is(TokenKind::Dedent))
      --level;
    consume();
  } while (level > 0 && !is(TokenKind::Eof));
}

//===----------------------------------------------------------------------===//
// Module and statement lists
//===----------------------------------------------------------------------===//

std::unique_ptr<Module> Parser::parseModule() {
  StmtList stmts;
  parseStatements(stmts, /*topLevel=*/true);
  std::vector<std::unique_ptr<FunctionDef>> functions;
  for (StmtPtr &stmt : stmts)
    if (isa<FunctionDef>(stmt.get()))
      functions.emplace_back(static_cast<FunctionDef *>(stmt.release()));
  return std::make_unique<Module>(std::move(functions), std::move(imports));
}

ExprPtr Parser::parseStandaloneExpression() {
  ExprPtr expr = parseExprList();
  consumeIf(TokenKind::Newline);
  if (expr && !is(TokenKind::Eof)) {
    errorExpected("end of expression");
    expr = nullptr;
  }
  while (!is(TokenKind::Eof)) // Lets the lexer finish its checks.
    consume();
  flushDeferredError();
  return expr;
}

/// Parses statements up to the DEDENT closing the block (consumed) or the
/// end of the file. `topLevel` accepts only function definitions.
void Parser::parseStatements(StmtList &out, bool topLevel) {
  // After a failed statement, its indented body and its elif/else clauses
  // are skipped without a cascade of "unexpected indent" errors.
  bool lastFailed = false;
  // Top-level statements after a broken `def` are probably its body.
  bool afterBrokenDef = false;
  while (!is(TokenKind::Dedent) && !is(TokenKind::Eof) && !diag.shouldStop()) {
    size_t start = index;
    if (is(TokenKind::Indent)) {
      if (!lastFailed)
        error(cur().loc, "unexpected indent");
      StmtList discarded;
      parseIndentedBlock(discarded);
    } else if (lastFailed && (is(TokenKind::KwElif) || is(TokenKind::KwElse))) {
      skipLine();
    } else if (is(TokenKind::Newline)) {
      consume();
    } else {
      bool isDef = is(TokenKind::KwDef) || is(TokenKind::At);
      size_t firstNew = out.size();
      bool ok = parseStatement(out, topLevel);
      if (!ok)
        synchronize(start);
      flushDeferredError();
      lastFailed = !ok;
      if (isDef)
        afterBrokenDef = !ok;
      for (size_t i = firstNew; topLevel && i < out.size(); ++i)
        if (!isa<FunctionDef>(out[i].get()) && !afterBrokenDef)
          error(out[i]->getLoc(), "only function definitions (@kernel or "
                                  "@func) are allowed at the top level");
    }
    if (index == start)
      consume(); // Whatever happened, make progress.
  }
  if (!topLevel)
    consumeIf(TokenKind::Dedent);
}

static bool isUnsupportedStatement(const std::string &word) {
  static const char *const words[] = {
      "while",  "class",    "import", "from",   "lambda",   "with", "try",
      "except", "finally",  "raise",  "global", "nonlocal", "del",  "assert",
      "break",  "continue", "yield",  "async",  "await"};
  return std::find(std::begin(words), std::end(words), word) != std::end(words);
}

bool Parser::parseStatement(StmtList &out, bool topLevel) {
  if (topLevel && is(TokenKind::Identifier) && cur().text == "from")
    return parseImport();
  StmtPtr stmt;
  switch (cur().kind) {
  case TokenKind::KwDef:
  case TokenKind::At:
    stmt = parseFunctionDef(/*nested=*/!topLevel);
    break;
  case TokenKind::KwIf:
    stmt = parseIf();
    break;
  case TokenKind::KwFor:
    stmt = parseFor();
    break;
  case TokenKind::KwElif:
  case TokenKind::KwElse:
    error(cur().loc, "'" + cur().text + "' without a matching 'if'");
    return false;
  default:
    return parseSimpleLine(out);
  }
  if (!stmt)
    return false;
  out.push_back(std::move(stmt));
  return true;
}

/// 'from' NAME 'import' NAME (',' NAME)* NEWLINE, or the names in
/// parentheses (a trailing comma allowed).
bool Parser::parseImport() {
  ast::Import import;
  consume(); // from
  if (!is(TokenKind::Identifier)) {
    errorExpected("the name of a file beside this one after 'from'");
    return false;
  }
  import.module = cur().text;
  import.moduleLoc = cur().loc;
  consume();
  if (is(TokenKind::Dot)) {
    error(cur().loc, "'from " + import.module +
                         ".': an import names a .tsl file in the same "
                         "directory, without dots");
    return false;
  }
  if (!is(TokenKind::Identifier) || cur().text != "import") {
    errorExpected("'import'");
    return false;
  }
  consume();
  bool parenthesized = consumeIf(TokenKind::LParen);
  do {
    if (parenthesized && is(TokenKind::RParen))
      break;
    if (is(TokenKind::Star)) {
      error(cur().loc, "'import *' is not supported: name the helpers to "
                       "import");
      return false;
    }
    if (!is(TokenKind::Identifier)) {
      errorExpected("the name of a helper to import");
      return false;
    }
    import.names.emplace_back(cur().text, cur().loc);
    consume();
    if (is(TokenKind::Identifier) && cur().text == "as") {
      error(cur().loc, "'import ... as' is not supported: a helper keeps "
                       "its name");
      return false;
    }
  } while (consumeIf(TokenKind::Comma));
  if (parenthesized && !expect(TokenKind::RParen, "to close the import list"))
    return false;
  if (!consumeIf(TokenKind::Newline) && !is(TokenKind::Eof)) {
    errorExpected("end of line");
    return false;
  }
  imports.push_back(std::move(import));
  return true;
}

/// The body after a ':' of a compound statement: an indented block, or
/// simple statements on the same line (`if c: pass`).
bool Parser::parseBlock(StmtList &body) {
  if (!consumeIf(TokenKind::Newline))
    return parseSimpleLine(body);
  if (!is(TokenKind::Indent)) {
    if (!is(TokenKind::Error))
      error(cur().loc, "expected an indented block");
    return false;
  }
  return parseIndentedBlock(body);
}

bool Parser::parseIndentedBlock(StmtList &body) {
  Nesting nesting(*this);
  if (!checkDepth(cur().loc)) {
    skipIndentedBlock();
    return false;
  }
  consume(); // INDENT
  parseStatements(body, /*topLevel=*/false);
  return true;
}

/// simple (';' simple)* [';'] NEWLINE
bool Parser::parseSimpleLine(StmtList &out) {
  while (true) {
    StmtPtr stmt = parseSimpleStatement();
    if (!stmt)
      return false;
    out.push_back(std::move(stmt));
    if (!consumeIf(TokenKind::Semicolon) || is(TokenKind::Newline))
      break;
  }
  if (consumeIf(TokenKind::Newline))
    return true;
  errorExpected("end of line");
  return false;
}

//===----------------------------------------------------------------------===//
// Simple statements
//===----------------------------------------------------------------------===//

StmtPtr Parser::parseSimpleStatement() {
  const Token &tok = cur();
  SourceLoc loc = tok.loc;
  switch (tok.kind) {
  case TokenKind::KwPass:
    consume();
    return std::make_unique<Pass>(loc);
  case TokenKind::KwReturn: {
    consume();
    ExprPtr value;
    if (!is(TokenKind::Newline) && !is(TokenKind::Semicolon) &&
        !(value = parseExprList()))
      return nullptr;
    return std::make_unique<Return>(loc, std::move(value));
  }
  case TokenKind::KwDef:
  case TokenKind::KwIf:
  case TokenKind::KwFor:
  case TokenKind::At:
    error(loc, "'" + tok.text + "' must start on its own line");
    return nullptr;
  case TokenKind::Identifier:
    if (tok.text == "import") {
      error(loc, "unsupported statement 'import': helpers are imported "
                 "with 'from MODULE import NAME'");
      return nullptr;
    }
    if (tok.text == "from") { // A top-level one is an import.
      error(loc, "imports belong at the top level of a file");
      return nullptr;
    }
    if (isUnsupportedStatement(tok.text)) {
      error(loc, "unsupported statement '" + tok.text + "'");
      return nullptr;
    }
    return parseAssignOrExpr();
  default:
    return parseAssignOrExpr();
  }
}

static std::optional<BinOpKind> augAssignOp(TokenKind kind) {
  switch (kind) {
  case TokenKind::PlusEqual:
    return BinOpKind::Add;
  case TokenKind::MinusEqual:
    return BinOpKind::Sub;
  case TokenKind::StarEqual:
    return BinOpKind::Mul;
  case TokenKind::SlashEqual:
    return BinOpKind::Div;
  case TokenKind::SlashSlashEqual:
    return BinOpKind::FloorDiv;
  case TokenKind::PercentEqual:
    return BinOpKind::Mod;
  case TokenKind::StarStarEqual:
    return BinOpKind::Pow;
  case TokenKind::AmpEqual:
    return BinOpKind::BitAnd;
  case TokenKind::PipeEqual:
    return BinOpKind::BitOr;
  case TokenKind::CaretEqual:
    return BinOpKind::BitXor;
  case TokenKind::LShiftEqual:
    return BinOpKind::LShift;
  case TokenKind::RShiftEqual:
    return BinOpKind::RShift;
  default:
    return std::nullopt;
  }
}

/// `targets = value`, `name op= value` or an expression statement.
StmtPtr Parser::parseAssignOrExpr() {
  SourceLoc loc = cur().loc;
  ExprPtr lhs = parseExprList();
  if (!lhs)
    return nullptr;

  if (consumeIf(TokenKind::Equal)) {
    std::vector<std::unique_ptr<Name>> targets;
    bool isTuple = false;
    if (!collectTargets(*lhs, targets, isTuple))
      return nullptr;
    ExprPtr value = parseExprList();
    if (!value)
      return nullptr;
    if (is(TokenKind::Equal)) {
      error(cur().loc, "chained assignment ('a = b = c') is not supported");
      return nullptr;
    }
    return std::make_unique<Assign>(loc, std::move(targets), isTuple,
                                    std::move(value));
  }

  if (std::optional<BinOpKind> op = augAssignOp(cur().kind)) {
    SourceLoc opLoc = cur().loc;
    const auto *name = dyn_cast<Name>(lhs.get());
    if (!name) {
      error(lhs->getLoc(), "augmented assignment target must be a name");
      return nullptr;
    }
    consume();
    ExprPtr value = parseExpr();
    if (!value)
      return nullptr;
    return std::make_unique<AugAssign>(
        opLoc, std::make_unique<Name>(name->getLoc(), name->getName()), *op,
        std::move(value));
  }

  if (is(TokenKind::Colon) && isa<Name>(lhs.get())) {
    error(cur().loc, "annotated assignments ('x: T = e') are not supported");
    return nullptr;
  }
  return std::make_unique<ExprStmt>(loc, std::move(lhs));
}

static const char *describeForAssignment(const Expr &expr) {
  switch (expr.getKind()) {
  case Expr::Kind::Subscript:
    return "a subscript (tiles are values: build a new one instead)";
  case Expr::Kind::Attribute:
    return "an attribute";
  case Expr::Kind::Call:
    return "a function call";
  case Expr::Kind::IntLit:
  case Expr::Kind::FloatLit:
  case Expr::Kind::BoolLit:
  case Expr::Kind::NoneLit:
  case Expr::Kind::StringLit:
    return "a literal";
  case Expr::Kind::Tuple:
    return "a nested tuple";
  default:
    return "an expression";
  }
}

/// Targets are names, or a flat tuple of names.
bool Parser::collectTargets(const Expr &lhs,
                            std::vector<std::unique_ptr<Name>> &targets,
                            bool &isTuple) {
  auto addName = [&](const Expr &target) {
    if (const auto *name = dyn_cast<Name>(&target)) {
      targets.push_back(
          std::make_unique<Name>(name->getLoc(), name->getName()));
      return true;
    }
    error(target.getLoc(),
          std::string("cannot assign to ") + describeForAssignment(target));
    return false;
  };
  const auto *tuple = dyn_cast<Tuple>(&lhs);
  if (!tuple)
    return addName(lhs);
  isTuple = true;
  if (tuple->getElements().empty()) {
    error(lhs.getLoc(), "cannot assign to an empty tuple");
    return false;
  }
  for (const ExprPtr &elt : tuple->getElements())
    if (!addName(*elt))
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Compound statements
//===----------------------------------------------------------------------===//

/// if/elif/else; each elif becomes an If nested in the else body.
StmtPtr Parser::parseIf() {
  struct Clause {
    SourceLoc loc;
    ExprPtr cond;
    StmtList body;
  };
  std::vector<Clause> clauses;
  StmtList elseBody;
  // Each clause deepens the resulting tree, so it counts as nesting.
  Nesting nesting(*this);
  do {
    Clause clause{cur().loc, nullptr, {}};
    consume(); // 'if' or 'elif'
    if (!clauses.empty()) {
      nesting.add();
      if (!checkDepth(clause.loc))
        return nullptr;
    }
    clause.cond = parseExpr();
    if (!clause.cond || !expect(TokenKind::Colon, "after the condition") ||
        !parseBlock(clause.body))
      return nullptr;
    clauses.push_back(std::move(clause));
  } while (is(TokenKind::KwElif));

  if (consumeIf(TokenKind::KwElse))
    if (!expect(TokenKind::Colon, "after 'else'") || !parseBlock(elseBody))
      return nullptr;

  StmtPtr result;
  for (auto it = clauses.rbegin(); it != clauses.rend(); ++it) {
    StmtList elseList;
    if (result)
      elseList.push_back(std::move(result));
    else
      elseList = std::move(elseBody);
    result = std::make_unique<If>(it->loc, std::move(it->cond),
                                  std::move(it->body), std::move(elseList));
  }
  return result;
}

StmtPtr Parser::parseFor() {
  SourceLoc loc = cur().loc;
  consume(); // 'for'
  if (!is(TokenKind::Identifier)) {
    errorExpected("a loop variable name");
    return nullptr;
  }
  auto target = std::make_unique<Name>(cur().loc, cur().text);
  consume();
  if (is(TokenKind::Comma)) {
    error(cur().loc, "a for loop target must be a single name");
    return nullptr;
  }
  if (!expect(TokenKind::KwIn, "after the loop variable"))
    return nullptr;
  ExprPtr iter = parseExpr();
  if (!iter)
    return nullptr;
  if (!isa<Call>(iter.get())) {
    error(iter->getLoc(), "a for loop must iterate over a call such as "
                          "range(...) or static_range(...)");
    return nullptr;
  }
  StmtList body;
  if (!expect(TokenKind::Colon, "after the for clause") || !parseBlock(body))
    return nullptr;
  if (is(TokenKind::KwElse)) {
    error(cur().loc, "'for ... else' is not supported");
    return nullptr;
  }
  std::unique_ptr<Call> call(static_cast<Call *>(iter.release()));
  return std::make_unique<For>(loc, std::move(target), std::move(call),
                               std::move(body));
}

std::unique_ptr<FunctionDef> Parser::parseFunctionDef(bool nested) {
  std::optional<Decorator> decorator;
  while (is(TokenKind::At)) {
    if (decorator) {
      error(cur().loc, "only one decorator is allowed");
      return nullptr;
    }
    if (!parseDecorator(decorator))
      return nullptr;
  }
  SourceLoc loc = cur().loc;
  if (!expect(TokenKind::KwDef, decorator ? "after the decorator" : ""))
    return nullptr;
  if (!is(TokenKind::Identifier)) {
    errorExpected("a function name");
    return nullptr;
  }
  std::string name = cur().text;
  SourceLoc nameLoc = cur().loc;
  consume();

  std::vector<Param> params;
  ExprPtr returns;
  StmtList body;
  if (!expect(TokenKind::LParen, "after the function name") ||
      !parseParams(params))
    return nullptr;
  if (consumeIf(TokenKind::Arrow) && !(returns = parseExpr()))
    return nullptr;
  if (!expect(TokenKind::Colon, "after the function signature") ||
      !parseBlock(body))
    return nullptr;
  return std::make_unique<FunctionDef>(
      loc, std::move(name), nameLoc, std::move(decorator), std::move(params),
      std::move(returns), std::move(body), nested);
}

/// '@' NAME ['(' keyword=value, ... ')'] NEWLINE
bool Parser::parseDecorator(std::optional<Decorator> &out) {
  consume(); // '@'
  if (!is(TokenKind::Identifier)) {
    errorExpected("a decorator name");
    return false;
  }
  Decorator decorator{cur().text, cur().loc, {}};
  consume();
  if (consumeIf(TokenKind::LParen)) {
    ExprList args;
    if (!parseArgList(args, decorator.keywords))
      return false;
    if (!args.empty()) {
      error(args.front()->getLoc(), "decorator arguments must be keywords, "
                                    "as in @kernel(num_warps=4)");
      return false;
    }
  }
  if (!consumeIf(TokenKind::Newline)) {
    errorExpected("end of line after the decorator");
    return false;
  }
  out = std::move(decorator);
  return true;
}

/// Parameters up to and including ')': NAME [':' annotation] ['=' default].
bool Parser::parseParams(std::vector<Param> &params) {
  while (!consumeIf(TokenKind::RParen)) {
    if (is(TokenKind::Star) || is(TokenKind::StarStar) ||
        is(TokenKind::Slash)) {
      error(cur().loc, "'" + cur().text +
                           "' in a parameter list is not "
                           "supported");
      return false;
    }
    if (!is(TokenKind::Identifier)) {
      errorExpected("a parameter name");
      return false;
    }
    Param param{cur().text, cur().loc, nullptr, nullptr};
    consume();
    for (const Param &other : params)
      if (other.name == param.name) {
        error(param.loc, "duplicate parameter '" + param.name + "'");
        return false;
      }
    if (consumeIf(TokenKind::Colon) && !(param.annotation = parseExpr()))
      return false;
    if (consumeIf(TokenKind::Equal)) {
      if (!(param.defaultValue = parseExpr()))
        return false;
    } else if (!params.empty() && params.back().defaultValue) {
      error(param.loc, "parameter '" + param.name +
                           "' without a default follows one with a default");
      return false;
    }
    params.push_back(std::move(param));
    if (!consumeIf(TokenKind::Comma) && !is(TokenKind::RParen)) {
      errorExpected("',' or ')'");
      return false;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

static bool startsExpression(TokenKind kind) {
  switch (kind) {
  case TokenKind::Identifier:
  case TokenKind::Int:
  case TokenKind::Float:
  case TokenKind::String:
  case TokenKind::KwTrue:
  case TokenKind::KwFalse:
  case TokenKind::KwNone:
  case TokenKind::KwNot:
  case TokenKind::LParen:
  case TokenKind::LBracket:
  case TokenKind::Minus:
  case TokenKind::Plus:
  case TokenKind::Tilde:
    return true;
  default:
    return false;
  }
}

/// expr (',' expr)* [','] -- a Tuple when there is a comma.
ExprPtr Parser::parseExprList() {
  ExprPtr first = parseExpr();
  if (!first || !is(TokenKind::Comma))
    return first;
  SourceLoc loc = first->getLoc();
  ExprList elements;
  elements.push_back(std::move(first));
  while (consumeIf(TokenKind::Comma) && startsExpression(cur().kind)) {
    ExprPtr elt = parseExpr();
    if (!elt)
      return nullptr;
    elements.push_back(std::move(elt));
  }
  return std::make_unique<Tuple>(loc, std::move(elements));
}

ExprPtr Parser::parseExpr() {
  ExprPtr expr = parseOr();
  if (expr && is(TokenKind::KwIf)) {
    error(cur().loc, "conditional expressions ('a if c else b') are not "
                     "supported; use where(c, a, b)");
    return nullptr;
  }
  return expr;
}

ExprPtr Parser::parseOr() {
  ExprPtr lhs = parseAnd();
  Nesting nesting(*this);
  while (lhs && is(TokenKind::KwOr)) {
    SourceLoc loc = cur().loc;
    consume();
    nesting.add();
    if (!checkDepth(loc))
      return nullptr;
    ExprPtr rhs = parseAnd();
    if (!rhs)
      return nullptr;
    lhs = std::make_unique<BoolOp>(loc, BoolOpKind::Or, std::move(lhs),
                                   std::move(rhs));
  }
  return lhs;
}

ExprPtr Parser::parseAnd() {
  ExprPtr lhs = parseNot();
  Nesting nesting(*this);
  while (lhs && is(TokenKind::KwAnd)) {
    SourceLoc loc = cur().loc;
    consume();
    nesting.add();
    if (!checkDepth(loc))
      return nullptr;
    ExprPtr rhs = parseNot();
    if (!rhs)
      return nullptr;
    lhs = std::make_unique<BoolOp>(loc, BoolOpKind::And, std::move(lhs),
                                   std::move(rhs));
  }
  return lhs;
}

ExprPtr Parser::parseNot() {
  if (!is(TokenKind::KwNot))
    return parseComparison();
  SourceLoc loc = cur().loc;
  consume();
  Nesting nesting(*this);
  if (!checkDepth(loc))
    return nullptr;
  ExprPtr operand = parseNot();
  if (!operand)
    return nullptr;
  return std::make_unique<UnaryOp>(loc, UnaryOpKind::Not, std::move(operand));
}

/// The comparison `tok` starts (`is` is an identifier to the lexer; `is not`
/// is completed by the caller).
static std::optional<CmpOpKind> comparisonOp(const Token &tok) {
  if (tok.is(TokenKind::Identifier))
    return tok.text == "is" ? std::optional(CmpOpKind::Is) : std::nullopt;
  switch (tok.kind) {
  case TokenKind::Less:
    return CmpOpKind::Lt;
  case TokenKind::LessEqual:
    return CmpOpKind::Le;
  case TokenKind::Greater:
    return CmpOpKind::Gt;
  case TokenKind::GreaterEqual:
    return CmpOpKind::Ge;
  case TokenKind::EqualEqual:
    return CmpOpKind::Eq;
  case TokenKind::NotEqual:
    return CmpOpKind::Ne;
  default:
    return std::nullopt;
  }
}

ExprPtr Parser::parseComparison() {
  ExprPtr lhs = parseBinary(0);
  if (!lhs)
    return nullptr;
  const Token &tok = cur();
  if (tok.is(TokenKind::KwIn) || tok.is(TokenKind::KwNot)) {
    std::string op = tok.is(TokenKind::KwNot) ? "not in" : tok.text;
    error(tok.loc, "the '" + op + "' operator is not supported");
    return nullptr;
  }
  std::optional<CmpOpKind> op = comparisonOp(tok);
  if (!op)
    return lhs;
  SourceLoc loc = tok.loc;
  consume();
  if (op == CmpOpKind::Is && is(TokenKind::KwNot)) {
    consume();
    op = CmpOpKind::IsNot;
  }
  ExprPtr rhs = parseBinary(0);
  if (!rhs)
    return nullptr;
  if (comparisonOp(cur())) {
    error(cur().loc, "chained comparisons ('a < b < c') are not supported; "
                     "write 'a < b and b < c'");
    return nullptr;
  }
  return std::make_unique<Compare>(loc, *op, std::move(lhs), std::move(rhs));
}

/// Left-associative binary operators by level, loosest first; below the last
/// level comes parseFactor (unary operators).
static const struct {
  TokenKind token;
  BinOpKind op;
  unsigned level;
} binaryOps[] = {
    {TokenKind::Pipe, BinOpKind::BitOr, 0},
    {TokenKind::Caret, BinOpKind::BitXor, 1},
    {TokenKind::Amp, BinOpKind::BitAnd, 2},
    {TokenKind::LessLess, BinOpKind::LShift, 3},
    {TokenKind::GreaterGreater, BinOpKind::RShift, 3},
    {TokenKind::Plus, BinOpKind::Add, 4},
    {TokenKind::Minus, BinOpKind::Sub, 4},
    {TokenKind::Star, BinOpKind::Mul, 5},
    {TokenKind::Slash, BinOpKind::Div, 5},
    {TokenKind::SlashSlash, BinOpKind::FloorDiv, 5},
    {TokenKind::Percent, BinOpKind::Mod, 5},
};
static constexpr unsigned kNumBinaryLevels = 6;

static std::optional<BinOpKind> binaryOp(unsigned level, TokenKind kind) {
  for (const auto &entry : binaryOps)
    if (entry.token == kind && entry.level == level)
      return entry.op;
  return std::nullopt;
}

ExprPtr Parser::parseBinary(unsigned level) {
  if (level == kNumBinaryLevels)
    return parseFactor();
  ExprPtr lhs = parseBinary(level + 1);
  Nesting nesting(*this);
  while (lhs) {
    std::optional<BinOpKind> op = binaryOp(level, cur().kind);
    if (!op)
      break;
    SourceLoc loc = cur().loc;
    consume();
    nesting.add();
    if (!checkDepth(loc))
      return nullptr;
    ExprPtr rhs = parseBinary(level + 1);
    if (!rhs)
      return nullptr;
    lhs = std::make_unique<BinOp>(loc, *op, std::move(lhs), std::move(rhs));
  }
  // Python operators the DSL leaves out, caught where they would bind.
  if (lhs && level == kNumBinaryLevels - 1 && is(TokenKind::At)) {
    error(cur().loc, "the '@' operator is not supported; use dot(a, b)");
    return nullptr;
  }
  return lhs;
}

/// Unary '-', '+', '~' bind tighter than binary operators but looser than
/// '**': -x**2 is -(x**2).
ExprPtr Parser::parseFactor() {
  std::optional<UnaryOpKind> op;
  if (is(TokenKind::Minus))
    op = UnaryOpKind::Neg;
  else if (is(TokenKind::Plus))
    op = UnaryOpKind::Pos;
  else if (is(TokenKind::Tilde))
    op = UnaryOpKind::Invert;
  if (!op)
    return parsePower();
  SourceLoc loc = cur().loc;
  consume();
  Nesting nesting(*this);
  if (!checkDepth(loc))
    return nullptr;
  ExprPtr operand = parseFactor();
  if (!operand)
    return nullptr;
  return std::make_unique<UnaryOp>(loc, *op, std::move(operand));
}

/// postfix ['**' factor]: right-associative, and 2**-1 is allowed.
ExprPtr Parser::parsePower() {
  ExprPtr base = parsePostfix();
  if (!base || !is(TokenKind::StarStar))
    return base;
  SourceLoc loc = cur().loc;
  consume();
  Nesting nesting(*this);
  if (!checkDepth(loc))
    return nullptr;
  ExprPtr exponent = parseFactor();
  if (!exponent)
    return nullptr;
  return std::make_unique<BinOp>(loc, BinOpKind::Pow, std::move(base),
                                 std::move(exponent));
}

/// atom followed by calls, subscripts and attributes.
ExprPtr Parser::parsePostfix() {
  ExprPtr expr = parseAtom();
  Nesting nesting(*this);
  while (expr) {
    if (!is(TokenKind::LParen) && !is(TokenKind::LBracket) &&
        !is(TokenKind::Dot))
      break;
    nesting.add();
    if (!checkDepth(cur().loc))
      return nullptr;
    if (is(TokenKind::LParen)) {
      expr = parseCall(std::move(expr));
    } else if (is(TokenKind::LBracket)) {
      expr = parseSubscript(std::move(expr));
    } else {
      consume(); // '.'
      if (!is(TokenKind::Identifier)) {
        errorExpected("an attribute name after '.'");
        return nullptr;
      }
      expr =
          std::make_unique<Attribute>(cur().loc, std::move(expr), cur().text);
      consume();
    }
  }
  return expr;
}

static bool isUnsupportedExpression(const std::string &word) {
  return word == "lambda" || word == "yield" || word == "await";
}

ExprPtr Parser::parseAtom() {
  const Token &tok = cur();
  SourceLoc loc = tok.loc;
  switch (tok.kind) {
  case TokenKind::Identifier:
    if (isUnsupportedExpression(tok.text) || isUnsupportedStatement(tok.text)) {
      error(loc, (isUnsupportedExpression(tok.text) ? "unsupported expression '"
                                                    : "unexpected keyword '") +
                     tok.text + "'");
      return nullptr;
    }
    consume();
    return std::make_unique<Name>(loc, tok.text);
  case TokenKind::Int:
    consume();
    return std::make_unique<IntLit>(loc, tok.intValue);
  case TokenKind::Float:
    consume();
    return std::make_unique<FloatLit>(loc, tok.floatValue);
  case TokenKind::KwTrue:
  case TokenKind::KwFalse:
    consume();
    return std::make_unique<BoolLit>(loc, tok.is(TokenKind::KwTrue));
  case TokenKind::KwNone:
    consume();
    return std::make_unique<NoneLit>(loc);
  case TokenKind::String: {
    std::string value;
    while (is(TokenKind::String)) { // "a" "b" concatenates, as in Python.
      value += cur().text;
      consume();
    }
    return std::make_unique<StringLit>(loc, std::move(value));
  }
  case TokenKind::LParen:
    return parseParenthesized();
  case TokenKind::LBracket:
    error(loc, "list literals are not supported; use a tuple such as (a, b)");
    return nullptr;
  default:
    errorExpected("an expression");
    return nullptr;
  }
}

/// '(' ')' is the empty tuple, '(' e ')' is e, '(' e ',' ... ')' a tuple.
ExprPtr Parser::parseParenthesized() {
  SourceLoc loc = cur().loc;
  consume(); // '('
  if (consumeIf(TokenKind::RParen))
    return std::make_unique<Tuple>(loc, ExprList());
  Nesting nesting(*this);
  if (!checkDepth(loc))
    return nullptr;
  ExprPtr first = parseExpr();
  if (!first)
    return nullptr;
  if (consumeIf(TokenKind::RParen))
    return first;
  if (!is(TokenKind::Comma)) {
    errorExpected("')'");
    return nullptr;
  }
  ExprList elements;
  elements.push_back(std::move(first));
  while (consumeIf(TokenKind::Comma) && !is(TokenKind::RParen)) {
    ExprPtr elt = parseExpr();
    if (!elt)
      return nullptr;
    elements.push_back(std::move(elt));
  }
  if (!consumeIf(TokenKind::RParen)) {
    errorExpected("',' or ')'");
    return nullptr;
  }
  return std::make_unique<Tuple>(loc, std::move(elements));
}

ExprPtr Parser::parseCall(ExprPtr callee) {
  SourceLoc loc = callee->getLoc();
  consume(); // '('
  ExprList args;
  std::vector<Keyword> keywords;
  if (!parseArgList(args, keywords))
    return nullptr;
  return std::make_unique<Call>(loc, std::move(callee), std::move(args),
                                std::move(keywords));
}

/// Arguments after '(' up to and including ')': positional ones first, then
/// `name=value` ones.
bool Parser::parseArgList(ExprList &args, std::vector<Keyword> &keywords) {
  Nesting nesting(*this);
  if (!checkDepth(cur().loc))
    return false;
  while (!consumeIf(TokenKind::RParen)) {
    if (is(TokenKind::Star) || is(TokenKind::StarStar)) {
      error(cur().loc, "'*' and '**' arguments are not supported");
      return false;
    }
    if (is(TokenKind::Identifier) && peek().is(TokenKind::Equal)) {
      Keyword kw{cur().text, cur().loc, nullptr};
      consume();
      consume(); // '='
      for (const Keyword &other : keywords)
        if (other.name == kw.name) {
          error(kw.loc, "duplicate keyword argument '" + kw.name + "'");
          return false;
        }
      if (!(kw.value = parseExpr()))
        return false;
      keywords.push_back(std::move(kw));
    } else {
      if (!keywords.empty() && startsExpression(cur().kind)) {
        error(cur().loc, "positional argument follows keyword argument");
        return false;
      }
      ExprPtr arg = parseExpr();
      if (!arg)
        return false;
      args.push_back(std::move(arg));
    }
    if (!consumeIf(TokenKind::Comma) && !is(TokenKind::RParen)) {
      errorExpected("',' or ')'");
      return false;
    }
  }
  return true;
}

/// '[' item (',' item)* [','] ']' where an item is an expression or a slice.
ExprPtr Parser::parseSubscript(ExprPtr value) {
  SourceLoc loc = cur().loc;
  consume(); // '['
  if (is(TokenKind::RBracket)) {
    error(cur().loc, "expected an index");
    return nullptr;
  }
  ExprList indices;
  while (!consumeIf(TokenKind::RBracket)) {
    ExprPtr item = parseSubscriptItem();
    if (!item)
      return nullptr;
    indices.push_back(std::move(item));
    if (!consumeIf(TokenKind::Comma) && !is(TokenKind::RBracket)) {
      errorExpected("',' or ']'");
      return nullptr;
    }
  }
  return std::make_unique<Subscript>(loc, std::move(value), std::move(indices));
}

/// expr | [expr] ':' [expr]
ExprPtr Parser::parseSubscriptItem() {
  SourceLoc loc = cur().loc;
  ExprPtr lower;
  if (!is(TokenKind::Colon)) {
    lower = parseExpr();
    if (!lower || !is(TokenKind::Colon))
      return lower;
  }
  consume(); // ':'
  ExprPtr upper;
  if (!is(TokenKind::Colon) && !is(TokenKind::Comma) &&
      !is(TokenKind::RBracket) && !(upper = parseExpr()))
    return nullptr;
  if (is(TokenKind::Colon)) {
    error(cur().loc, "slice steps are not supported");
    return nullptr;
  }
  return std::make_unique<Slice>(loc, std::move(lower), std::move(upper));
}

//===- Parser.h - Recursive-descent parser for the Tessel DSL ---*- C++ -*-===//
//
// Builds the AST from the token stream. On a syntax error the parser reports
// it, skips to the end of the logical line and carries on, so one run reports
// several errors. It always terminates: every loop either consumes a token or
// stops, and nesting is capped so that no input can exhaust the stack.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_FRONTEND_PARSER_H
#define TESSEL_FRONTEND_PARSER_H

#include "Frontend/AST.h"
#include "Frontend/Lexer.h"

#include <deque>
#include <memory>
#include <optional>

namespace tessel {

class Parser {
public:
  /// Bounds the nesting of brackets, operators and blocks; deeper input is
  /// an error rather than a stack overflow.
  static constexpr unsigned kMaxDepth = 200;

  Parser(Lexer &lexer, DiagnosticEngine &diag);

  /// Parses a whole file. Always returns a module, partial after errors:
  /// check DiagnosticEngine::hasErrors() before using it.
  std::unique_ptr<ast::Module> parseModule();

  /// Parses one expression (a bare `a, b` gives a Tuple) that must fill the
  /// whole input, e.g. the VALUE of `tesselc -D NAME=VALUE`. Null on error.
  ast::ExprPtr parseStandaloneExpression();

private:
  class Nesting;

  // Token stream.
  const Token &tokenAt(size_t i);
  const Token &cur() { return tokenAt(index); }
  const Token &peek(unsigned n = 1) { return tokenAt(index + n); }
  bool is(TokenKind kind) { return cur().is(kind); }
  void consume();
  bool consumeIf(TokenKind kind);
  bool expect(TokenKind kind, std::string_view context);

  // Errors and recovery.
  void error(SourceLoc loc, std::string_view message);
  void errorExpected(std::string_view what);
  bool checkDepth(SourceLoc loc);
  void synchronize(size_t stmtStart);
  void flushDeferredError();
  void skipLine();
  void skipIndentedBlock();

  // Statements.
  void parseStatements(ast::StmtList &out, bool topLevel);
  bool parseStatement(ast::StmtList &out, bool topLevel);
  bool parseBlock(ast::StmtList &body);
  bool parseIndentedBlock(ast::StmtList &body);
  bool parseSimpleLine(ast::StmtList &out);
  ast::StmtPtr parseSimpleStatement();
  ast::StmtPtr parseAssignOrExpr();
  bool collectTargets(const ast::Expr &lhs,
                      std::vector<std::unique_ptr<ast::Name>> &targets,
                      bool &isTuple);
  bool parseImport();
  ast::StmtPtr parseIf();
  ast::StmtPtr parseFor();
  std::unique_ptr<ast::FunctionDef> parseFunctionDef(bool nested);
  bool parseDecorator(std::optional<ast::Decorator> &out);
  bool parseParams(std::vector<ast::Param> &params);

  // Expressions, loosest binding first.
  ast::ExprPtr parseExprList();
  ast::ExprPtr parseExpr();
  ast::ExprPtr parseOr();
  ast::ExprPtr parseAnd();
  ast::ExprPtr parseNot();
  ast::ExprPtr parseComparison();
  ast::ExprPtr parseBinary(unsigned level);
  ast::ExprPtr parseFactor();
  ast::ExprPtr parsePower();
  ast::ExprPtr parsePostfix();
  ast::ExprPtr parseAtom();
  ast::ExprPtr parseParenthesized();
  ast::ExprPtr parseCall(ast::ExprPtr callee);
  bool parseArgList(ast::ExprList &args, std::vector<ast::Keyword> &keywords);
  ast::ExprPtr parseSubscript(ast::ExprPtr value);
  ast::ExprPtr parseSubscriptItem();

  Lexer &lexer;
  DiagnosticEngine &diag;
  /// Tokens read so far; a deque so references survive further reads.
  std::deque<Token> tokens;
  size_t index = 0;
  unsigned depth = 0;
  /// A syntax error inside brackets, held back until the end of the line:
  /// if the lexer finds the bracket never closed, that is the real error.
  std::optional<Diagnostic> deferred;
  unsigned unclosedBeforeDeferred = 0;
  /// The file's `from ... import ...` lines, in order.
  std::vector<ast::Import> imports;
};

/// Lexes and parses `sm`'s buffer, reporting to `diag`.
std::unique_ptr<ast::Module> parseSource(const SourceManager &sm,
                                         DiagnosticEngine &diag);

} // namespace tessel

#endif // TESSEL_FRONTEND_PARSER_H

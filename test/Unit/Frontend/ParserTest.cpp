//===- ParserTest.cpp - Parser, AST dumper and error recovery -------------===//

#include "Frontend/Parser.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>

using namespace tessel;
using namespace tessel::ast;
using namespace tessel::ast::rtti;

namespace {
struct Parsed {
  std::unique_ptr<Module> module;
  std::string output; // Everything the DiagnosticEngine printed.
  unsigned numErrors = 0;

  /// The header line of each diagnostic ("t.tsl:L:C: error: ...").
  std::vector<std::string> headers() const {
    std::vector<std::string> result;
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("t.tsl", 0) == 0)
        result.push_back(line);
    return result;
  }
};

Parsed parse(const std::string &src) {
  SourceManager sm("t.tsl", src);
  std::ostringstream os;
  DiagnosticEngine diag(sm, os);
  Parsed result;
  result.module = parseSource(sm, diag);
  result.output = os.str();
  result.numErrors = diag.getNumErrors();
  return result;
}

/// Parses a standalone expression and renders it fully parenthesised.
std::string expr(const std::string &src) {
  SourceManager sm("t.tsl", src);
  std::ostringstream os;
  DiagnosticEngine diag(sm, os);
  Lexer lexer(sm, diag);
  ExprPtr e = Parser(lexer, diag).parseStandaloneExpression();
  EXPECT_EQ(os.str(), "") << "for: " << src;
  return e ? formatExpr(*e) : "<null>";
}

/// The single error a source produces (header line only).
std::string onlyError(const std::string &src) {
  Parsed p = parse(src);
  std::vector<std::string> headers = p.headers();
  EXPECT_EQ(headers.size(), 1u) << p.output;
  return headers.empty() ? "" : headers.front();
}

std::string dumpBody(const std::string &body) {
  Parsed p = parse("def f():\n" + body);
  EXPECT_EQ(p.output, "");
  std::ostringstream os;
  for (const auto &stmt : p.module->getFunctions().at(0)->getBody())
    dump(*stmt, os);
  return os.str();
}
} // namespace

//===----------------------------------------------------------------------===//
// Precedence and expression forms
//===----------------------------------------------------------------------===//

TEST(ParserTest, ArithmeticPrecedence) {
  EXPECT_EQ(expr("a + b * c"), "(a + (b * c))");
  EXPECT_EQ(expr("a * b + c"), "((a * b) + c)");
  EXPECT_EQ(expr("a - b - c"), "((a - b) - c)");
  EXPECT_EQ(expr("a // b % c / d * e"), "((((a // b) % c) / d) * e)");
  EXPECT_EQ(expr("(a + b) * c"), "((a + b) * c)");
}

TEST(ParserTest, PowerAndUnary) {
  EXPECT_EQ(expr("a ** b ** c"), "(a ** (b ** c))");
  EXPECT_EQ(expr("-a ** b"), "(-(a ** b))");
  EXPECT_EQ(expr("a ** -b"), "(a ** (-b))");
  EXPECT_EQ(expr("~a * -b"), "((~a) * (-b))");
  EXPECT_EQ(expr("--a"), "(-(-a))");
  EXPECT_EQ(expr("-f(x)[0]"), "(-f(x)[0])");
}

TEST(ParserTest, BitwiseAndComparisonPrecedence) {
  EXPECT_EQ(expr("a | b ^ c & d"), "(a | (b ^ (c & d)))");
  // Shifts, as in Python: looser than '+', tighter than '&'.
  EXPECT_EQ(expr("a & b << c + d >> e"), "(a & ((b << (c + d)) >> e))");
  EXPECT_EQ(expr("a & b + c"), "(a & (b + c))");
  EXPECT_EQ(expr("a | b < c"), "((a | b) < c)");
  EXPECT_EQ(expr("a < b + c"), "(a < (b + c))");
  EXPECT_EQ(expr("(offs < n) & (offs >= 0)"), "((offs < n) & (offs >= 0))");
  EXPECT_EQ(expr("a == b"), "(a == b)");
  EXPECT_EQ(expr("a != b"), "(a != b)");
  EXPECT_EQ(expr("a <= b"), "(a <= b)");
}

TEST(ParserTest, BooleanPrecedence) {
  EXPECT_EQ(expr("a is None or b is not None"),
            "((a is None) or (b is not None))");
  EXPECT_EQ(expr("a < b and c > d or not e"),
            "(((a < b) and (c > d)) or (not e))");
  EXPECT_EQ(expr("not a == b"), "(not (a == b))");
  EXPECT_EQ(expr("a and b and c"), "((a and b) and c)");
  EXPECT_EQ(expr("a or b and c"), "(a or (b and c))");
  EXPECT_EQ(expr("not not a"), "(not (not a))");
}

TEST(ParserTest, PostfixForms) {
  EXPECT_EQ(expr("x.to(f16)"), "x.to(f16)");
  EXPECT_EQ(expr("rows[:, None] * stride + cols[None, :]"),
            "((rows[:, None] * stride) + cols[None, :])");
  EXPECT_EQ(expr("t[a:b, :c, d:, :]"), "t[a:b, :c, d:, :]");
  EXPECT_EQ(expr("load(x + offs, mask=m, other=0.0)"),
            "load((x + offs), mask=m, other=0.0)");
  EXPECT_EQ(expr("f()(1)[2].y"), "f()(1)[2].y");
  EXPECT_EQ(expr("max(x, axis=1,)"), "max(x, axis=1)");
}

TEST(ParserTest, TuplesAndLiterals) {
  EXPECT_EQ(expr("(a,)"), "(a,)");
  EXPECT_EQ(expr("()"), "()");
  EXPECT_EQ(expr("a, b"), "(a, b)");
  EXPECT_EQ(expr("zeros((64, 32), f32)"), "zeros((64, 32), f32)");
  EXPECT_EQ(expr("1_000 + 0x10 + 1.5 + 1e-3 + True + False + None"),
            "((((((1000 + 16) + 1.5) + 0.001) + True) + False) + None)");
  EXPECT_EQ(expr("float(\"-inf\")"), "float(\"-inf\")");
  EXPECT_EQ(expr("'a' \"b\""), "\"ab\"");
}

TEST(ParserTest, ExpressionLocations) {
  SourceManager sm("t.tsl", "a + load(p)[i]");
  std::ostringstream os;
  DiagnosticEngine diag(sm, os);
  Lexer lexer(sm, diag);
  ExprPtr e = Parser(lexer, diag).parseStandaloneExpression();
  ASSERT_TRUE(e);
  const auto *add = dyn_cast<BinOp>(e.get());
  ASSERT_TRUE(add);
  EXPECT_EQ(add->getLoc(), (SourceLoc{1, 3})); // The operator.
  const auto *sub = dyn_cast<Subscript>(add->getRHS());
  ASSERT_TRUE(sub);
  EXPECT_EQ(sub->getLoc(), (SourceLoc{1, 12})); // The '['.
  const auto *call = cast<Call>(sub->getValue());
  EXPECT_EQ(call->getLoc(), (SourceLoc{1, 5})); // The callee.
  EXPECT_EQ(call->getCalleeName(), "load");
}

//===----------------------------------------------------------------------===//
// Functions and statements
//===----------------------------------------------------------------------===//

TEST(ParserTest, AddKernelDump) {
  const char *src =
      "@kernel(num_warps=4)\n"
      "def add(x: ptr[f32], y: ptr[f32], out: ptr[f32], n: i32, "
      "BLOCK: constexpr = 1024):\n"
      "    offs = program_id(0) * BLOCK + arange(0, BLOCK)\n"
      "    m = offs < n\n"
      "    store(out + offs, load(x + offs, mask=m, other=0.0), mask=m)\n";
  Parsed p = parse(src);
  ASSERT_EQ(p.output, "");
  EXPECT_EQ(dumpToString(*p.module), R"(Module
  FunctionDef add
    Decorator kernel
      Keyword num_warps
        IntLit 4
    Param x
      Annotation
        Subscript
          Name ptr
          Name f32
    Param y
      Annotation
        Subscript
          Name ptr
          Name f32
    Param out
      Annotation
        Subscript
          Name ptr
          Name f32
    Param n
      Annotation
        Name i32
    Param BLOCK
      Annotation
        Name constexpr
      Default
        IntLit 1024
    Body
      Assign offs
        BinOp +
          BinOp *
            Call
              Name program_id
              IntLit 0
            Name BLOCK
          Call
            Name arange
            IntLit 0
            Name BLOCK
      Assign m
        Compare <
          Name offs
          Name n
      ExprStmt
        Call
          Name store
          BinOp +
            Name out
            Name offs
          Call
            Name load
            BinOp +
              Name x
              Name offs
            Keyword mask
              Name m
            Keyword other
              FloatLit 0.0
          Keyword mask
            Name m
)");
}

TEST(ParserTest, DumpWithLocations) {
  Parsed p = parse("@func\ndef g(a):\n    return a\n");
  ASSERT_EQ(p.output, "");
  EXPECT_EQ(dumpToString(*p.module, /*withLocs=*/true), R"(Module
  FunctionDef g @2:1
    Decorator func @1:2
    Param a @2:7
    Body
      Return @3:5
        Name a @3:12
)");
}

TEST(ParserTest, FunctionSignature) {
  Parsed p = parse("@kernel(num_warps=8, num_stages=3)\n"
                   "def k(a: ptr[f16], s: f32, B: constexpr = 64,) -> None:\n"
                   "    pass\n"
                   "def h(x, y):\n"
                   "    return x, y\n");
  ASSERT_EQ(p.output, "");
  const auto &fns = p.module->getFunctions();
  ASSERT_EQ(fns.size(), 2u);
  const FunctionDef &k = *fns[0];
  EXPECT_EQ(k.getName(), "k");
  EXPECT_EQ(k.getNameLoc(), (SourceLoc{2, 5}));
  ASSERT_TRUE(k.getDecorator());
  EXPECT_EQ(k.getDecorator()->name, "kernel");
  ASSERT_EQ(k.getDecorator()->keywords.size(), 2u);
  EXPECT_EQ(k.getDecorator()->keywords[1].name, "num_stages");
  EXPECT_EQ(cast<IntLit>(k.getDecorator()->keywords[0].value.get())->getValue(),
            8);
  ASSERT_EQ(k.getParams().size(), 3u);
  EXPECT_EQ(formatExpr(*k.getParams()[0].annotation), "ptr[f16]");
  EXPECT_FALSE(k.getParams()[1].defaultValue);
  EXPECT_EQ(formatExpr(*k.getParams()[2].defaultValue), "64");
  ASSERT_TRUE(k.getReturnAnnotation());
  EXPECT_TRUE(isa<NoneLit>(k.getReturnAnnotation()));
  EXPECT_FALSE(k.isNested());
  EXPECT_FALSE(fns[1]->getDecorator());
  EXPECT_EQ(p.module->lookup("h"), fns[1].get());
  EXPECT_EQ(p.module->lookup("nope"), nullptr);
}

TEST(ParserTest, NestedFunctions) {
  Parsed p = parse("@kernel\n"
                   "def k(n: i32):\n"
                   "    def body(unit, begin, end):\n"
                   "        return softmax_state(64, 64)\n"
                   "    stream_k(units=n, iters=4, body=body, "
                   "merge=softmax_merge, epilogue=body)\n");
  ASSERT_EQ(p.output, "");
  const auto &body = p.module->getFunctions()[0]->getBody();
  ASSERT_EQ(body.size(), 2u);
  const auto *inner = dyn_cast<FunctionDef>(body[0].get());
  ASSERT_TRUE(inner);
  EXPECT_TRUE(inner->isNested());
  EXPECT_EQ(inner->getParams().size(), 3u);
  const auto *call = cast<Call>(cast<ExprStmt>(body[1].get())->getExpr());
  ASSERT_TRUE(call->findKeyword("merge"));
  EXPECT_EQ(formatExpr(*call->findKeyword("merge")->value), "softmax_merge");
  EXPECT_EQ(call->findKeyword("missing"), nullptr);
}

TEST(ParserTest, Assignments) {
  EXPECT_EQ(dumpBody("    a, b = f(x)\n"
                     "    (c, d) = e\n"
                     "    g, = h\n"
                     "    acc += dot(a, b)\n"
                     "    i //= 2\n"),
            "Assign (a, b)\n  Call\n    Name f\n    Name x\n"
            "Assign (c, d)\n  Name e\n"
            "Assign (g,)\n  Name h\n"
            "AugAssign acc +=\n  Call\n    Name dot\n    Name a\n    Name b\n"
            "AugAssign i //=\n  IntLit 2\n");
  EXPECT_EQ(dumpBody("    o, lse = softmax_finalize(st)\n    return o, lse\n"),
            "Assign (o, lse)\n  Call\n    Name softmax_finalize\n    Name st\n"
            "Return\n  Tuple\n    Name o\n    Name lse\n");
}

TEST(ParserTest, IfElifElseDesugars) {
  EXPECT_EQ(dumpBody("    if a:\n        x = 1\n    elif b:\n        x = 2\n"
                     "    else:\n        x = 3\n"),
            "If\n  Name a\n  Then\n    Assign x\n      IntLit 1\n"
            "  Else\n    If\n      Name b\n      Then\n        Assign x\n"
            "          IntLit 2\n      Else\n        Assign x\n"
            "          IntLit 3\n");
  EXPECT_EQ(dumpBody("    if a: pass\n"), "If\n  Name a\n  Then\n    Pass\n");
}

TEST(ParserTest, ForLoopsAndSimpleStatements) {
  EXPECT_EQ(dumpBody("    for i in range(0, n, 2):\n        acc = acc + i\n"
                     "    for j in static_range(4): pass\n"
                     "    x = 1; y = 2;\n"
                     "    return\n"),
            "For i\n  Call\n    Name range\n    IntLit 0\n    Name n\n"
            "    IntLit 2\n  Body\n    Assign acc\n      BinOp +\n"
            "        Name acc\n        Name i\n"
            "For j\n  Call\n    Name static_range\n    IntLit 4\n  Body\n"
            "    Pass\n"
            "Assign x\n  IntLit 1\nAssign y\n  IntLit 2\nReturn\n");
}

TEST(ParserTest, DocstringIsAnExpressionStatement) {
  EXPECT_EQ(dumpBody("    \"\"\"Adds.\n    Twice.\"\"\"\n    pass\n"),
            "ExprStmt\n  StringLit \"Adds.\\n    Twice.\"\nPass\n");
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(ParserTest, ErrorFormat) {
  Parsed p = parse("def f(x):\n    y = x +\n");
  EXPECT_EQ(p.output, "t.tsl:2:12: error: expected an expression, found end "
                      "of line\n"
                      "    y = x +\n"
                      "           ^\n");
  EXPECT_EQ(p.numErrors, 1u);
}

TEST(ParserTest, SyntaxErrorsWithLocations) {
  EXPECT_EQ(onlyError("def f(x, 1):\n    pass\n"),
            "t.tsl:1:10: error: expected a parameter name, found number '1'");
  EXPECT_EQ(onlyError("def f()\n    pass\n"),
            "t.tsl:1:8: error: expected ':' after the function signature, "
            "found end of line");
  EXPECT_EQ(onlyError("def f():\npass\n"),
            "t.tsl:2:1: error: expected an indented block");
  // A bracket left open on an earlier line is reported as such.
  EXPECT_EQ(onlyError("def f():\n    x = (1, 2\n    y = 3\n"),
            "t.tsl:2:9: error: '(' was never closed");
  // ... but not when it is closed after all.
  EXPECT_EQ(onlyError("def f():\n    x = g(a,\n          b c)\n"),
            "t.tsl:3:13: error: expected ',' or ')', found identifier 'c'");
  EXPECT_EQ(onlyError("def f(:\n    pass\n"),
            "t.tsl:1:6: error: '(' was never closed");
  EXPECT_EQ(onlyError("def f():\n    x = 1 2\n"),
            "t.tsl:2:11: error: expected end of line, found number '2'");
  EXPECT_EQ(onlyError("@kernel\nx = 1\n"),
            "t.tsl:2:1: error: expected 'def' after the decorator, found "
            "identifier 'x'");
}

TEST(ParserTest, UnsupportedStatements) {
  for (const char *word : {"while", "class", "lambda", "with", "try", "global",
                           "del", "assert", "break", "continue", "yield"}) {
    std::string src = std::string("def f():\n    ") + word + " x\n";
    EXPECT_EQ(onlyError(src), std::string("t.tsl:2:5: error: unsupported "
                                          "statement '") +
                                  word + "'");
  }
}

TEST(ParserTest, Imports) {
  Parsed p = parse("from common import (a,\n    b,)\nfrom other import c\n"
                   "@func\ndef f():\n    pass\n");
  EXPECT_EQ(p.headers(), std::vector<std::string>{});
  const auto &imports = p.module->getImports();
  ASSERT_EQ(imports.size(), 2u);
  EXPECT_EQ(imports[0].module, "common");
  EXPECT_EQ(imports[0].moduleLoc, (SourceLoc{1, 6}));
  ASSERT_EQ(imports[0].names.size(), 2u);
  EXPECT_EQ(imports[0].names[1].first, "b");
  EXPECT_EQ(imports[0].names[1].second, (SourceLoc{2, 5}));
  EXPECT_EQ(imports[1].names[0].first, "c");
  EXPECT_EQ(p.module->getFunctions().size(), 1u);
  EXPECT_EQ(onlyError("import common\n"),
            "t.tsl:1:1: error: unsupported statement 'import': helpers are "
            "imported with 'from MODULE import NAME'");
  EXPECT_EQ(onlyError("def f():\n    from common import a\n"),
            "t.tsl:2:5: error: imports belong at the top level of a file");
  EXPECT_EQ(onlyError("from common import a as b\n"),
            "t.tsl:1:22: error: 'import ... as' is not supported: a helper "
            "keeps its name");
}

TEST(ParserTest, UnsupportedCompoundStatementSkipsItsBody) {
  // One error: the body of the while is skipped, not "unexpected indent".
  Parsed p = parse("def f():\n    while x:\n        y = 1\n        z = 2\n"
                   "    return y\n");
  EXPECT_EQ(p.headers(),
            std::vector<std::string>{
                "t.tsl:2:5: error: unsupported statement 'while'"});
  EXPECT_EQ(p.module->getFunctions().size(), 1u);
}

TEST(ParserTest, UnsupportedExpressions) {
  EXPECT_EQ(onlyError("def f():\n    x = a < b < c\n"),
            "t.tsl:2:15: error: chained comparisons ('a < b < c') are not "
            "supported; write 'a < b and b < c'");
  EXPECT_EQ(onlyError("def f():\n    x = a if c else b\n"),
            "t.tsl:2:11: error: conditional expressions ('a if c else b') are "
            "not supported; use where(c, a, b)");
  EXPECT_EQ(onlyError("def f():\n    x = [1, 2]\n"),
            "t.tsl:2:9: error: list literals are not supported; use a tuple "
            "such as (a, b)");
  EXPECT_EQ(onlyError("def f():\n    x = a @ b\n"),
            "t.tsl:2:11: error: the '@' operator is not supported; use dot(a, "
            "b)");
  EXPECT_EQ(onlyError("def f():\n    x = a in b\n"),
            "t.tsl:2:11: error: the 'in' operator is not supported");
  EXPECT_EQ(onlyError("def f():\n    x = a is None is b\n"),
            "t.tsl:2:19: error: chained comparisons ('a < b < c') are not "
            "supported; write 'a < b and b < c'");
  EXPECT_EQ(onlyError("def f():\n    x = lambda: 1\n"),
            "t.tsl:2:9: error: unsupported expression 'lambda'");
  EXPECT_EQ(onlyError("def f():\n    x = t[1:2:3]\n"),
            "t.tsl:2:14: error: slice steps are not supported");
  EXPECT_EQ(onlyError("def f():\n    x = t[]\n"),
            "t.tsl:2:11: error: expected an index");
}

TEST(ParserTest, BadAssignments) {
  EXPECT_EQ(onlyError("def f():\n    t[0] = 1\n"),
            "t.tsl:2:6: error: cannot assign to a subscript (tiles are "
            "values: build a new one instead)");
  EXPECT_EQ(onlyError("def f():\n    a, f() = 1, 2\n"),
            "t.tsl:2:8: error: cannot assign to a function call");
  EXPECT_EQ(onlyError("def f():\n    a = b = 1\n"),
            "t.tsl:2:11: error: chained assignment ('a = b = c') is not "
            "supported");
  EXPECT_EQ(onlyError("def f():\n    a.b += 1\n"),
            "t.tsl:2:7: error: augmented assignment target must be a name");
  EXPECT_EQ(onlyError("def f():\n    x: i32 = 1\n"),
            "t.tsl:2:6: error: annotated assignments ('x: T = e') are not "
            "supported");
}

TEST(ParserTest, BadCallsAndSignatures) {
  EXPECT_EQ(onlyError("def f():\n    g(a=1, 2)\n"),
            "t.tsl:2:12: error: positional argument follows keyword argument");
  EXPECT_EQ(onlyError("def f():\n    g(a=1, a=2)\n"),
            "t.tsl:2:12: error: duplicate keyword argument 'a'");
  EXPECT_EQ(onlyError("def f():\n    g(*a)\n"),
            "t.tsl:2:7: error: '*' and '**' arguments are not supported");
  EXPECT_EQ(onlyError("def f(a, a):\n    pass\n"),
            "t.tsl:1:10: error: duplicate parameter 'a'");
  EXPECT_EQ(onlyError("def f(a=1, b):\n    pass\n"),
            "t.tsl:1:12: error: parameter 'b' without a default follows one "
            "with a default");
  EXPECT_EQ(onlyError("def f(*args):\n    pass\n"),
            "t.tsl:1:7: error: '*' in a parameter list is not supported");
  EXPECT_EQ(onlyError("@kernel(4)\ndef f():\n    pass\n"),
            "t.tsl:1:9: error: decorator arguments must be keywords, as in "
            "@kernel(num_warps=4)");
  EXPECT_EQ(onlyError("@kernel\n@func\ndef f():\n    pass\n"),
            "t.tsl:2:1: error: only one decorator is allowed");
}

TEST(ParserTest, BadForLoops) {
  EXPECT_EQ(onlyError("def f():\n    for a, b in g():\n        pass\n"),
            "t.tsl:2:10: error: a for loop target must be a single name");
  EXPECT_EQ(onlyError("def f():\n    for a in xs:\n        pass\n"),
            "t.tsl:2:14: error: a for loop must iterate over a call such as "
            "range(...) or static_range(...)");
  EXPECT_EQ(onlyError("def f():\n    for a in range(3):\n        pass\n"
                      "    else:\n        pass\n"),
            "t.tsl:4:5: error: 'for ... else' is not supported");
}

TEST(ParserTest, StructureErrors) {
  EXPECT_EQ(onlyError("def f():\n    x = 1\n        y = 2\n"),
            "t.tsl:3:9: error: unexpected indent");
  EXPECT_EQ(onlyError("def f():\n    else:\n        pass\n"),
            "t.tsl:2:5: error: 'else' without a matching 'if'");
  EXPECT_EQ(onlyError("x = 1\n"),
            "t.tsl:1:1: error: only function definitions (@kernel or @func) "
            "are allowed at the top level");
  EXPECT_EQ(onlyError("def f():\n    if a: for i in range(2): pass\n"),
            "t.tsl:2:11: error: 'for' must start on its own line");
}

TEST(ParserTest, LexerErrorsAreNotRepeatedByTheParser) {
  EXPECT_EQ(onlyError("def f():\n    x = a $ b\n"),
            "t.tsl:2:11: error: invalid character '$'");
  EXPECT_EQ(onlyError("def f():\n    x = 1abc\n"),
            "t.tsl:2:9: error: invalid number literal '1abc'");
  EXPECT_EQ(onlyError("def f():\n    x = g(1,\n"),
            "t.tsl:2:10: error: '(' was never closed");
}

//===----------------------------------------------------------------------===//
// Recovery and termination
//===----------------------------------------------------------------------===//

TEST(ParserTest, RecoveryReportsSeveralErrors) {
  Parsed p = parse("@kernel\n"
                   "def k(x: ptr[f32]):\n"
                   "    a = (1 +\n"
                   "    )\n"
                   "    b = 2 *\n"
                   "    while b:\n"
                   "        b -= 1\n"
                   "    c = a < b < 3\n"
                   "    store(x, c)\n"
                   "def ok():\n"
                   "    return 1\n"
                   "def bad(:\n"
                   "    pass\n");
  EXPECT_EQ(p.headers(),
            (std::vector<std::string>{
                "t.tsl:4:5: error: expected an expression, found ')'",
                "t.tsl:5:12: error: expected an expression, found end of line",
                "t.tsl:6:5: error: unsupported statement 'while'",
                "t.tsl:8:15: error: chained comparisons ('a < b < c') are not "
                "supported; write 'a < b and b < c'",
                "t.tsl:12:8: error: '(' was never closed"}));
  // The functions that parsed are kept.
  ASSERT_EQ(p.module->getFunctions().size(), 2u);
  EXPECT_EQ(p.module->getFunctions()[1]->getName(), "ok");
  EXPECT_EQ(p.module->getFunctions()[0]->getBody().size(), 1u); // store(...)
}

TEST(ParserTest, FailedIfSkipsItsElseClauses) {
  Parsed p = parse("def f():\n    if a +:\n        x = 1\n    elif b:\n"
                   "        x = 2\n    else:\n        x = 3\n    y = 4\n");
  EXPECT_EQ(p.numErrors, 1u) << p.output;
  EXPECT_EQ(p.module->getFunctions()[0]->getBody().size(), 1u);
}

TEST(ParserTest, ErrorsInsideDiscardedBlocksAreStillReported) {
  Parsed p = parse("def f():\n    x = 1\n        y = )\n");
  EXPECT_EQ(p.headers(),
            (std::vector<std::string>{
                "t.tsl:3:9: error: unexpected indent",
                "t.tsl:3:13: error: expected an expression, found ')'"}));
}

TEST(ParserTest, TooManyErrors) {
  std::string src = "def f():\n";
  for (int i = 0; i < 50; ++i)
    src += "    x = )\n";
  Parsed p = parse(src);
  std::vector<std::string> headers = p.headers();
  ASSERT_EQ(headers.size(), 21u);
  EXPECT_EQ(headers.back(),
            "t.tsl: error: too many errors emitted, stopping now");
}

TEST(ParserTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep = "def f():\n    x = " + std::string(5000, '(') + "1" +
                     std::string(5000, ')') + "\n";
  std::string deepError = onlyError(deep);
  EXPECT_EQ(deepError.substr(0, 8), "t.tsl:2:");
  EXPECT_NE(deepError.find(" error: nesting too deep (more than 200 levels)"),
            std::string::npos);
  std::string unary = "def f():\n    x = " + std::string(100000, '-') + "1\n";
  EXPECT_EQ(parse(unary).numErrors, 1u);
  std::string chain = "def f():\n    x = 1";
  for (int i = 0; i < 100000; ++i)
    chain += " + 1";
  EXPECT_EQ(parse(chain + "\n").numErrors, 1u);
  std::string calls = "def f():\n    x = ";
  for (int i = 0; i < 20000; ++i)
    calls += "f(";
  EXPECT_GE(parse(calls + "\n").numErrors, 1u);
  std::string attrs = "def f():\n    x = a";
  for (int i = 0; i < 50000; ++i)
    attrs += ".b";
  EXPECT_EQ(parse(attrs + "\n").numErrors, 1u);
}

TEST(ParserTest, DeepBlocksAndElifChainsAreBounded) {
  std::string blocks = "def f():\n";
  for (int i = 1; i < 3000; ++i)
    blocks += std::string(i, ' ') + "if a:\n";
  blocks += std::string(3000, ' ') + "pass\n";
  EXPECT_EQ(parse(blocks).numErrors, 1u);
  std::string elifs = "def f():\n    if a:\n        pass\n";
  for (int i = 0; i < 20000; ++i)
    elifs += "    elif a:\n        pass\n";
  EXPECT_EQ(parse(elifs).numErrors, 1u);
  // Deep indentation at top level (each line an unexpected indent).
  std::string indents;
  for (int i = 0; i < 3000; ++i)
    indents += std::string(i, ' ') + "x\n";
  EXPECT_GE(parse(indents).numErrors, 1u);
}

TEST(ParserTest, GarbageTerminates) {
  // Random bytes, then random soup of DSL tokens (more likely to get deep
  // into the parser).
  std::mt19937 rng(12345);
  for (int round = 0; round < 200; ++round) {
    std::string bytes;
    for (int i = 0; i < 300; ++i)
      bytes.push_back(static_cast<char>(rng() % 256));
    parse(bytes);
  }
  const char *pieces[] = {
      "def",  "f",    "(",    ")",      "[",      "]",      ":",       "\n",
      "    ", "  ",   "=",    "+",      "**",     ",",      "@kernel", "if",
      "elif", "else", "for",  "in",     "range(", "return", "1",       "2.5",
      "'s'",  "not",  "and",  "<",      "x",      ".to",    "None",    ";",
      "\t",   "#c",   "\\\n", "\"\"\"", "while",  "-",      "~"};
  for (int round = 0; round < 500; ++round) {
    std::string src;
    for (int i = 0; i < 200; ++i)
      src += std::string(pieces[rng() % std::size(pieces)]) + " ";
    Parsed p = parse(src);
    ASSERT_TRUE(p.module);
    dumpToString(*p.module, true);
  }
}

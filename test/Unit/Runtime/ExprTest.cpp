//===- ExprTest.cpp - Launch expressions ----------------------------------===//

#include "Runtime/Expr.h"

#include <gtest/gtest.h>

using namespace tessel;

// N and M are integer parameters in slots 0 and 1; BLOCK is a constant.
static Result<Expr::Symbol> resolve(std::string_view name) {
  if (name == "N")
    return Expr::Symbol{Expr::Symbol::Slot, 0};
  if (name == "M")
    return Expr::Symbol{Expr::Symbol::Slot, 1};
  if (name == "BLOCK")
    return Expr::Symbol{Expr::Symbol::Constant, 64};
  return Status::error("unknown name '" + std::string(name) + "'");
}

static Result<int64_t> eval(std::string_view text, int64_t n = 0,
                            int64_t m = 0) {
  Result<Expr> e = Expr::parse(text, resolve);
  if (!e.ok())
    return e.status();
  return e->eval({n, m});
}

static int64_t evalOk(std::string_view text, int64_t n = 0, int64_t m = 0) {
  Result<int64_t> r = eval(text, n, m);
  EXPECT_TRUE(r.ok()) << text << ": " << r.message();
  return r.ok() ? *r : -999;
}

static std::string evalError(std::string_view text, int64_t n = 0,
                             int64_t m = 0) {
  Result<int64_t> r = eval(text, n, m);
  EXPECT_FALSE(r.ok()) << text << " = " << (r.ok() ? *r : 0);
  return r.ok() ? "" : r.message();
}

TEST(Expr, PrecedenceAndAssociativity) {
  EXPECT_EQ(evalOk("1 + 2 * 3"), 7);
  EXPECT_EQ(evalOk("(1 + 2) * 3"), 9);
  EXPECT_EQ(evalOk("10 - 4 - 3"), 3);
  EXPECT_EQ(evalOk("100 / 10 / 5"), 2);
  EXPECT_EQ(evalOk("2 * 3 % 4"), 2);
  EXPECT_EQ(evalOk("-3 + 5"), 2);
  EXPECT_EQ(evalOk("- -4"), 4);
  EXPECT_EQ(evalOk("+4"), 4);
  EXPECT_EQ(evalOk("2*-3"), -6);
  EXPECT_EQ(evalOk("\t7\t"), 7);
}

TEST(Expr, DivisionFloorsLikePython) {
  EXPECT_EQ(evalOk("7 / 2"), 3);
  EXPECT_EQ(evalOk("-7 / 2"), -4);
  EXPECT_EQ(evalOk("7 / -2"), -4);
  EXPECT_EQ(evalOk("-7 % 2"), 1);
  EXPECT_EQ(evalOk("7 % -2"), -1);
  EXPECT_EQ(evalOk("cdiv(7, 2)"), 4);
  EXPECT_EQ(evalOk("cdiv(8, 2)"), 4);
  EXPECT_EQ(evalOk("cdiv(0, 64)"), 0);
  EXPECT_EQ(evalOk("cdiv(-7, 2)"), -3);
}

TEST(Expr, FunctionsNamesAndConstants) {
  EXPECT_EQ(evalOk("min(3, 1, 2)"), 1);
  EXPECT_EQ(evalOk("max(3, 1, 2)"), 3);
  EXPECT_EQ(evalOk("cdiv(N, BLOCK)", 1000), 16);
  EXPECT_EQ(evalOk("N * M + BLOCK", 3, 5), 79);
  EXPECT_EQ(evalOk("min(cdiv(N, BLOCK) * M, 132 * 2)", 1 << 20, 8), 264);
  EXPECT_EQ(evalOk("9223372036854775807"), INT64_MAX);
}

TEST(Expr, SyntaxErrorsGiveTheColumn) {
  const std::pair<const char *, const char *> cases[] = {
      {"", "'': expected a number, a name or '(', got the end at end"},
      {"1 +", "'1 +': expected a number, a name or '(', got the end at end"},
      {"(1 + 2", "'(1 + 2': expected ')' at end"},
      {"1 2", "'1 2': unexpected '2' at column 3"},
      {"1.5", "'1.5': unexpected '.' at column 2"},
      {"N $ 2", "'N $ 2': unexpected '$' at column 3"},
      {"* 2", "'* 2': expected a number, a name or '(' at column 1"},
      {"cdiv(1)", "'cdiv(1)': cdiv takes 2 arguments, got 1 at column 1"},
      {"cdiv(1, 2, 3)",
       "'cdiv(1, 2, 3)': cdiv takes 2 arguments, got 3 at column 1"},
      {"min(1)", "'min(1)': min takes 2 or more arguments, got 1 at column 1"},
      {"max(1 2)", "'max(1 2)': expected ',' or ')' at column 7"},
      {"foo(1)",
       "'foo(1)': unknown function 'foo' (known: cdiv, min, max) at column 1"},
      {"99999999999999999999",
       "'99999999999999999999': integer literal too large at column 1"},
      {"cdiv(K, 64)", "'cdiv(K, 64)': unknown name 'K' at column 6"},
  };
  for (const auto &[text, expected] : cases)
    EXPECT_EQ(evalError(text), expected) << text;
}

TEST(Expr, EvaluationErrors) {
  EXPECT_EQ(evalError("N / M", 5, 0), "'N / M': division by zero");
  EXPECT_EQ(evalError("N % M", 5, 0), "'N % M': division by zero");
  EXPECT_EQ(evalError("cdiv(N, M)", 5, 0), "'cdiv(N, M)': division by zero");
  EXPECT_EQ(evalError("N * N", int64_t(1) << 32), "'N * N': integer overflow");
  EXPECT_EQ(evalError("-N", INT64_MIN), "'-N': integer overflow");
  EXPECT_EQ(evalError("N / M", INT64_MIN, -1), "'N / M': integer overflow");
  EXPECT_EQ(evalOk("N % M", INT64_MIN, -1), 0);
  EXPECT_EQ(evalError("9223372036854775807 + 1"),
            "'9223372036854775807 + 1': integer overflow");
  EXPECT_EQ(evalError("N - 1", INT64_MIN), "'N - 1': integer overflow");
}

TEST(Expr, NestingIsBounded) {
  unsigned max = Expr::kMaxDepth - 1;
  EXPECT_EQ(evalOk(std::string(max, '(') + "1" + std::string(max, ')')), 1);
  std::string deep =
      std::string(max + 1, '(') + "1" + std::string(max + 1, ')');
  EXPECT_NE(evalError(deep).find("nesting deeper than 64"), std::string::npos);
  EXPECT_NE(evalError(std::string(100000, '-') + "1").find("nesting deeper"),
            std::string::npos);
  EXPECT_NE(evalError(std::string(100000, '(')).find("nesting deeper"),
            std::string::npos);
}

TEST(Expr, LengthIsBounded) {
  std::string sum = "0";
  for (unsigned i = 0; i < (Expr::kMaxCode - 1) / 2; ++i)
    sum += "+N";
  EXPECT_EQ(evalOk(sum, 1), int64_t((Expr::kMaxCode - 1) / 2));
  EXPECT_NE(evalError(sum + "+N+N").find("longer than 256 operations"),
            std::string::npos);
}

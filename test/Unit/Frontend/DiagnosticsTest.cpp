//===- DiagnosticsTest.cpp - SourceManager and DiagnosticEngine -----------===//

#include "Frontend/Diagnostics.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace tessel;

TEST(SourceManagerTest, Lines) {
  SourceManager sm("a.tsl", "first\nsecond\r\nthird");
  EXPECT_EQ(sm.getNumLines(), 3u);
  EXPECT_EQ(sm.getLine(1), "first");
  EXPECT_EQ(sm.getLine(2), "second");
  EXPECT_EQ(sm.getLine(3), "third");
  EXPECT_EQ(sm.getLine(0), "");
  EXPECT_EQ(sm.getLine(4), "");
}

TEST(SourceManagerTest, MissingFile) {
  std::string err;
  EXPECT_FALSE(SourceManager::fromFile("/nonexistent/x.tsl", err));
  EXPECT_NE(err.find("cannot open"), std::string::npos);
}

TEST(DiagnosticsTest, ErrorFormatWithCaret) {
  SourceManager sm("k.tsl", "def f():\n    x = $\n");
  std::ostringstream os;
  DiagnosticEngine diag(sm, os);
  diag.error({2, 9}, "invalid character '$'");
  EXPECT_EQ(os.str(), "k.tsl:2:9: error: invalid character '$'\n"
                      "    x = $\n"
                      "        ^\n");
  EXPECT_EQ(diag.getNumErrors(), 1u);
  EXPECT_TRUE(diag.hasErrors());
}

TEST(DiagnosticsTest, NoteAndWarning) {
  SourceManager sm("k.tsl", "a\nb\n");
  std::ostringstream os;
  DiagnosticEngine diag(sm, os);
  diag.warning({1, 1}, "w");
  diag.note({2, 1}, "n");
  EXPECT_EQ(os.str(),
            "k.tsl:1:1: warning: w\na\n^\nk.tsl:2:1: note: n\nb\n^\n");
  EXPECT_FALSE(diag.hasErrors());
  ASSERT_EQ(diag.getDiagnostics().size(), 2u);
  EXPECT_EQ(diag.getDiagnostics()[1].severity, Severity::Note);
}

TEST(DiagnosticsTest, CaretKeepsTabsAndSkipsUtf8Continuations) {
  SourceManager sm("k.tsl", "\t\xCE\xBB x\n");
  std::ostringstream os;
  DiagnosticEngine diag(sm, os);
  diag.error({1, 5}, "here"); // Byte column of 'x'.
  EXPECT_EQ(os.str(), "k.tsl:1:5: error: here\n\t\xCE\xBB x\n\t  ^\n");
}

TEST(DiagnosticsTest, ColumnPastEndIsClamped) {
  SourceManager sm("k.tsl", "ab");
  std::ostringstream os;
  DiagnosticEngine diag(sm, os);
  diag.error({1, 1000}, "eof");
  EXPECT_EQ(os.str(), "k.tsl:1:1000: error: eof\nab\n  ^\n");
}

TEST(DiagnosticsTest, NoLocation) {
  SourceManager sm("k.tsl", "ab");
  std::ostringstream os;
  DiagnosticEngine diag(sm, os);
  diag.error({}, "no kernel");
  EXPECT_EQ(os.str(), "k.tsl: error: no kernel\n");
}

TEST(DiagnosticsTest, ControlBytesArePrintedAsQuestionMarks) {
  SourceManager sm("k.tsl", std::string("a\0b\x1b", 4));
  std::ostringstream os;
  DiagnosticEngine diag(sm, os);
  diag.error({1, 2}, "nul");
  EXPECT_EQ(os.str(), "k.tsl:1:2: error: nul\na?b?\n ^\n");
}

TEST(DiagnosticsTest, TooManyErrors) {
  SourceManager sm("k.tsl", "x\n");
  std::ostringstream os;
  DiagnosticEngine diag(sm, os, /*maxErrors=*/3);
  for (int i = 0; i < 10; ++i) {
    diag.error({1, 1}, "e");
    diag.note({1, 1}, "n");
  }
  EXPECT_EQ(diag.getNumErrors(), 10u);
  EXPECT_TRUE(diag.shouldStop());
  EXPECT_EQ(diag.getDiagnostics().size(), 6u); // 3 errors + 3 notes.
  std::string out = os.str();
  EXPECT_NE(out.find("k.tsl: error: too many errors emitted, stopping now\n"),
            std::string::npos);
  // Printed once, at the end.
  EXPECT_EQ(out.find("too many errors"), out.rfind("too many errors"));
  std::string last = "k.tsl: error: too many errors emitted, stopping now\n";
  ASSERT_GE(out.size(), last.size());
  EXPECT_EQ(out.substr(out.size() - last.size()), last);
}

//===- Diagnostics.h - Source buffers and error reporting -------*- C++ -*-===//
//
// Part of the Tessel front end. Independent of MLIR: the lexer, parser and
// AST only need a source buffer and a place to report errors.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_FRONTEND_DIAGNOSTICS_H
#define TESSEL_FRONTEND_DIAGNOSTICS_H

#include <cstddef>
#include <deque>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace tessel {

/// A position in a source buffer. Line and column are 1-based; columns count
/// bytes (as MLIR's FileLineColLoc does). {0, 0} means "no location". `file`
/// names the buffer among the DiagnosticEngine's: 0 the file being compiled,
/// others the files it imports from.
struct SourceLoc {
  unsigned line = 0;
  unsigned col = 0;
  unsigned file = 0;

  bool isValid() const { return line != 0; }
  bool operator==(const SourceLoc &o) const {
    return line == o.line && col == o.col && file == o.file;
  }
  bool operator!=(const SourceLoc &o) const { return !(*this == o); }
};

/// Owns the text of one source file and indexes its lines.
class SourceManager {
public:
  SourceManager(std::string filename, std::string text);

  /// Reads a file; on failure returns nullopt and sets `errorMessage`.
  static std::optional<SourceManager> fromFile(const std::string &path,
                                               std::string &errorMessage);

  const std::string &getFilename() const { return filename; }
  std::string_view getBuffer() const { return text; }
  unsigned getNumLines() const { return lineStarts.size(); }

  /// The text of a 1-based line without its line terminator; empty if out of
  /// range.
  std::string_view getLine(unsigned line) const;

private:
  std::string filename;
  std::string text;
  std::vector<size_t> lineStarts;
};

enum class Severity { Error, Warning, Note };

/// "error", "warning" or "note".
const char *severityName(Severity severity);

struct Diagnostic {
  Severity severity;
  SourceLoc loc;
  std::string message;
};

/// Collects diagnostics and prints each one, clang style:
///
///   FILE:LINE:COL: error: MESSAGE
///   <source line>
///       ^
///
/// After `maxErrors` errors it prints one "too many errors" line and drops
/// everything after it; clients poll shouldStop() to give up early.
class DiagnosticEngine {
public:
  DiagnosticEngine(const SourceManager &sm, std::ostream &os,
                   unsigned maxErrors = 20);

  void error(SourceLoc loc, std::string_view message);
  void warning(SourceLoc loc, std::string_view message);
  /// A note belongs to the error or warning before it and is dropped with it.
  void note(SourceLoc loc, std::string_view message);

  /// Every error reported, including the ones past the limit.
  unsigned getNumErrors() const { return numErrors; }
  bool hasErrors() const { return numErrors != 0; }
  /// True once the error limit has been hit.
  bool shouldStop() const { return limitReached; }
  /// 0 means no limit.
  void setMaxErrors(unsigned n) { maxErrors = n; }

  /// The diagnostics that were printed, in order.
  const std::vector<Diagnostic> &getDiagnostics() const { return diags; }
  /// The file being compiled (file 0).
  const SourceManager &getSourceManager() const { return sm; }

  /// Takes a file the compiled one imports from; its locations carry the
  /// returned number. The engine keeps it for as long as diagnostics may
  /// point into it (a pass's error names the line of an imported helper).
  unsigned addSource(SourceManager source);
  /// The buffer of a location's `file` (file 0 for an unknown number).
  const SourceManager &getSource(unsigned file) const;
  /// The number of the buffer `source` (0 if the engine does not hold it).
  unsigned getFileId(const SourceManager &source) const;
  /// The number of the buffer named `filename`, or 0.
  unsigned getFileId(std::string_view filename) const;

  /// Renders one diagnostic (header, source line, caret) as printed.
  std::string format(const Diagnostic &diag) const;

private:
  void emit(Severity severity, SourceLoc loc, std::string_view message);

  const SourceManager &sm;
  /// Files 1, 2, ...; a deque so that references to them stay valid.
  std::deque<SourceManager> imported;
  std::ostream &os;
  unsigned maxErrors;
  unsigned numErrors = 0;
  bool limitReached = false;
  bool lastDropped = false;
  std::vector<Diagnostic> diags;
};

} // namespace tessel

#endif // TESSEL_FRONTEND_DIAGNOSTICS_H

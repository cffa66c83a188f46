//===- Diagnostics.cpp - Source buffers and error reporting ---------------===//

#include "Frontend/Diagnostics.h"

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace tessel;

SourceManager::SourceManager(std::string filename, std::string text)
    : filename(std::move(filename)), text(std::move(text)) {
  lineStarts.push_back(0);
  for (size_t i = 0, e = this->text.size(); i != e; ++i)
    if (this->text[i] == '\n')
      lineStarts.push_back(i + 1);
}

std::optional<SourceManager>
SourceManager::fromFile(const std::string &path, std::string &errorMessage) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    errorMessage = "cannot open '" + path + "'";
    return std::nullopt;
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) {
    errorMessage = "cannot read '" + path + "'";
    return std::nullopt;
  }
  return SourceManager(path, contents.str());
}

std::string_view SourceManager::getLine(unsigned line) const {
  if (line == 0 || line > lineStarts.size())
    return {};
  size_t begin = lineStarts[line - 1];
  size_t end = line < lineStarts.size() ? lineStarts[line] - 1 : text.size();
  std::string_view result(text.data() + begin, end - begin);
  // Lines of CRLF files print without the CR.
  if (!result.empty() && result.back() == '\r')
    result.remove_suffix(1);
  return result;
}

DiagnosticEngine::DiagnosticEngine(const SourceManager &sm, std::ostream &os,
                                   unsigned maxErrors)
    : sm(sm), os(os), maxErrors(maxErrors) {}

unsigned DiagnosticEngine::addSource(SourceManager source) {
  imported.push_back(std::move(source));
  return imported.size();
}

const SourceManager &DiagnosticEngine::getSource(unsigned file) const {
  return file == 0 || file > imported.size() ? sm : imported[file - 1];
}

unsigned DiagnosticEngine::getFileId(const SourceManager &source) const {
  for (size_t i = 0; i < imported.size(); ++i)
    if (&imported[i] == &source)
      return i + 1;
  return 0;
}

unsigned DiagnosticEngine::getFileId(std::string_view filename) const {
  for (size_t i = 0; i < imported.size(); ++i)
    if (imported[i].getFilename() == filename)
      return i + 1;
  return 0;
}

void DiagnosticEngine::error(SourceLoc loc, std::string_view message) {
  ++numErrors;
  if (limitReached) {
    lastDropped = true;
    return;
  }
  if (maxErrors != 0 && numErrors > maxErrors) {
    limitReached = true;
    lastDropped = true;
    os << sm.getFilename()
       << ": error: too many errors emitted, stopping now\n";
    return;
  }
  emit(Severity::Error, loc, message);
}

void DiagnosticEngine::warning(SourceLoc loc, std::string_view message) {
  if (limitReached) {
    lastDropped = true;
    return;
  }
  emit(Severity::Warning, loc, message);
}

void DiagnosticEngine::note(SourceLoc loc, std::string_view message) {
  if (lastDropped)
    return;
  Diagnostic diag{Severity::Note, loc, std::string(message)};
  os << format(diag);
  diags.push_back(std::move(diag));
}

void DiagnosticEngine::emit(Severity severity, SourceLoc loc,
                            std::string_view message) {
  lastDropped = false;
  Diagnostic diag{severity, loc, std::string(message)};
  os << format(diag);
  os.flush();
  diags.push_back(std::move(diag));
}

const char *tessel::severityName(Severity severity) {
  switch (severity) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  }
  return "error";
}

/// The source line as printed: control bytes become '?' so that a stray NUL
/// or escape sequence cannot garble the terminal; tabs stay for alignment.
static std::string printableLine(std::string_view line) {
  std::string out(line);
  for (char &c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f)
      c = '?';
  }
  return out;
}

/// Spaces up to the column, copying tabs and skipping UTF-8 continuation
/// bytes so the caret lands under the right character on a terminal.
static std::string caretLine(std::string_view line, size_t col) {
  std::string out;
  for (size_t i = 0; i + 1 < col; ++i) {
    if (i >= line.size()) {
      out.push_back(' ');
      continue;
    }
    unsigned char u = static_cast<unsigned char>(line[i]);
    if (u == '\t')
      out.push_back('\t');
    else if ((u & 0xC0) != 0x80)
      out.push_back(' ');
  }
  out.push_back('^');
  return out;
}

std::string DiagnosticEngine::format(const Diagnostic &diag) const {
  const SourceManager &sm = getSource(diag.loc.file);
  std::string out = sm.getFilename();
  if (diag.loc.isValid())
    out += ":" + std::to_string(diag.loc.line) + ":" +
           std::to_string(diag.loc.col);
  out += ": ";
  out += severityName(diag.severity);
  out += ": ";
  out += diag.message;
  out += "\n";
  if (!diag.loc.isValid() || diag.loc.line > sm.getNumLines())
    return out;
  std::string_view line = sm.getLine(diag.loc.line);
  out += printableLine(line) + "\n";
  // Clamp: a column past the end (say, at end of file) points just after it.
  size_t col = std::min<size_t>(std::max(diag.loc.col, 1u), line.size() + 1);
  out += caretLine(line, col) + "\n";
  return out;
}

//===- Imports.cpp - Helpers imported from other DSL files ----------------===//

#include "Frontend/Imports.h"

#include "Frontend/Parser.h"

#include <algorithm>
#include <filesystem>

using namespace tessel;
namespace fs = std::filesystem;

/// The directory an import of the file named `filename` looks in: the file's
/// own, or (empty) the working directory for a file name without one and for
/// source text without a file ("<string>").
static fs::path importDirectory(const std::string &filename) {
  if (filename.empty() || filename.front() == '<')
    return {};
  return fs::path(filename).parent_path();
}

/// How `active` and `byPath` name a file.
static std::string fileKey(const std::string &path) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(fs::path(path), ec);
  return ec ? path : canonical.string();
}

bool ImportResolver::resolve(ast::Module &module, unsigned file) {
  active.push_back(fileKey(diag.getSource(file).getFilename()));
  bool ok = resolveImports(module, file);
  active.pop_back();
  return ok;
}

bool ImportResolver::resolveImports(ast::Module &module, unsigned file) {
  const std::string &importer = diag.getSource(file).getFilename();
  fs::path dir = importDirectory(importer);
  bool ok = true;
  std::map<std::string, SourceLoc> bound;
  for (const ast::Import &import : module.getImports()) {
    fs::path path = dir / (import.module + ".tsl");
    ast::Module *from =
        load(path.string(), import.module + ".tsl", import.moduleLoc);
    if (!from) {
      ok = false;
      continue;
    }
    for (const auto &[name, loc] : import.names) {
      auto error = [&](const std::string &message) {
        diag.error(loc, message);
        ok = false;
      };
      const ast::FunctionDef *fn = from->lookupDefined(name);
      const ast::Decorator *dec = fn ? fn->getDecorator() : nullptr;
      if (!fn) {
        error(import.module + ".tsl has no top-level function '" + name + "'");
      } else if (!dec || dec->name != "func") {
        error("'" + name + "' of " + import.module +
              ".tsl is not a @func helper: only helpers can be imported");
      } else if (const ast::FunctionDef *own = module.lookupDefined(name)) {
        error("'" + name +
              "' is imported and also defined in this file, at "
              "line " +
              std::to_string(own->getNameLoc().line));
      } else if (auto [first, isNew] = bound.emplace(name, loc); !isNew) {
        error("'" + name + "' is already imported at line " +
              std::to_string(first->second.line));
      } else {
        module.bindImport(name, fn);
      }
    }
  }
  return ok;
}

ast::Module *ImportResolver::load(const std::string &path,
                                  const std::string &shown,
                                  SourceLoc importLoc) {
  std::string key = fileKey(path);
  if (std::find(active.begin(), active.end(), key) != active.end()) {
    diag.error(importLoc, "import cycle: " + shown +
                              " imports from this file (directly or through "
                              "others)");
    return nullptr;
  }
  if (auto it = byPath.find(key); it != byPath.end())
    return it->second;
  std::string message;
  std::optional<SourceManager> source = SourceManager::fromFile(path, message);
  std::error_code ec;
  if (!source || !fs::is_regular_file(path, ec)) {
    diag.error(importLoc,
               "cannot import from '" + shown +
                   "': " + (source ? "'" + path + "' is not a file" : message));
    return nullptr;
  }
  unsigned file = diag.addSource(std::move(*source));
  std::unique_ptr<ast::Module> module = parseSource(diag.getSource(file), diag);
  if (!module || diag.hasErrors())
    return nullptr;
  active.push_back(key);
  bool ok = resolveImports(*module, file);
  active.pop_back();
  if (!ok)
    return nullptr;
  ast::Module *result = module.get();
  modules.push_back(std::move(module));
  byPath.emplace(key, result);
  return result;
}

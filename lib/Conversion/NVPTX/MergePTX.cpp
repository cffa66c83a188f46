//===- MergePTX.cpp - One PTX module from modules compiled apart ----------===//
//
// The kernels of a file compile on several threads, each in a module of its
// own (Compile.cpp); the bundle holds one PTX module. PTX text is a header
// (.version, .target, .address_size) and module-scope items: declarations
// ending in ';' and definitions ending in a body's '}'. Merging keeps one
// header, each item once, and refuses (the caller then compiles the file as
// one module) where two modules give one name different items.
//
//===----------------------------------------------------------------------===//

#include "Conversion/NVPTX/GPUCompile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Regex.h"

using namespace tessel;

namespace {
/// A module-scope item, the comment lines before it and the name it declares
/// or defines (empty for comments after the last item).
struct Item {
  std::string comments;
  std::string text;
  std::string name;
};

struct ParsedPTX {
  std::string header;
  std::vector<Item> items;
};

/// The line without its // comment.
llvm::StringRef code(llvm::StringRef line) {
  return line.take_front(line.find("//"));
}

/// The name an item declares or defines: the first identifier of its
/// signature (the text before its body) once parenthesised lists, array
/// extents and initialisers are taken out; empty if it has none.
std::string nameOf(llvm::StringRef text) {
  std::string signature;
  int parens = 0;
  for (llvm::StringRef line : llvm::split(text, '\n')) {
    for (char c : code(line)) {
      if (c == '{' && parens == 0)
        break;
      parens += (c == '(') - (c == ')');
      if (parens == 0 && c != ')')
        signature += c;
    }
    if (code(line).contains('{') && parens == 0)
      break;
    signature += '\n';
  }
  signature = signature.substr(0, signature.find_first_of("[=;"));
  static const llvm::Regex identifier("^[A-Za-z_$%][A-Za-z0-9_$]*$");
  llvm::SmallVector<llvm::StringRef> words;
  llvm::SplitString(signature, words, " \t\n,");
  for (llvm::StringRef word : words)
    if (identifier.match(word))
      return word.str();
  return {};
}

/// Splits PTX text into its header and items; fails on text it cannot read
/// (an unbalanced bracket, an item without a name, no header).
std::optional<ParsedPTX> parse(llvm::StringRef ptx) {
  ParsedPTX parsed;
  llvm::SmallVector<llvm::StringRef> lines;
  ptx.split(lines, '\n');
  size_t i = 0;
  for (bool done = false; i < lines.size() && !done; ++i) {
    done = code(lines[i]).trim().starts_with(".address_size");
    parsed.header += lines[i].str() + "\n";
  }
  if (i == lines.size())
    return std::nullopt;
  std::string comments, pending;
  int depth = 0;
  for (; i < lines.size(); ++i) {
    llvm::StringRef line = lines[i];
    llvm::StringRef body = code(line).trim();
    if (depth == 0 && pending.empty() && body.empty()) {
      // Comments between items travel with the next one; blank lines not.
      if (!line.trim().empty())
        comments += line.str() + "\n";
      continue;
    }
    pending += line.str() + "\n";
    for (char c : body)
      depth += (c == '(' || c == '{') - (c == ')' || c == '}');
    if (depth < 0)
      return std::nullopt;
    if (depth == 0 && (body.ends_with(";") || body.ends_with("}"))) {
      std::string name = nameOf(pending);
      if (name.empty())
        return std::nullopt;
      parsed.items.push_back(
          {std::move(comments), std::move(pending), std::move(name)});
      comments.clear();
      pending.clear();
    }
  }
  if (depth != 0 || !pending.empty())
    return std::nullopt;
  if (!comments.empty())
    parsed.items.push_back({std::move(comments), "", ""});
  return parsed;
}

/// The item's text with every `.align N` as `.align`: two declarations of
/// one symbol that differ only there merge to the larger alignment.
std::string withoutAlignment(llvm::StringRef text) {
  static const llvm::Regex align("\\.align[ \t]+[0-9]+");
  std::string result = text.str();
  while (align.match(result))
    result = align.sub(".align", result);
  return result;
}

unsigned alignmentOf(llvm::StringRef text) {
  static const llvm::Regex align("\\.align[ \t]+([0-9]+)");
  llvm::SmallVector<llvm::StringRef> match;
  unsigned value = 0;
  if (align.match(text, &match))
    match[1].getAsInteger(10, value);
  return value;
}
} // namespace

std::optional<std::string>
tessel::mergePTXModules(llvm::ArrayRef<std::string> modules) {
  if (modules.empty())
    return std::nullopt;
  std::vector<ParsedPTX> parsed;
  for (const std::string &ptx : modules) {
    std::optional<ParsedPTX> p = parse(ptx);
    if (!p || p->header != (parsed.empty() ? p->header : parsed[0].header))
      return std::nullopt;
    parsed.push_back(std::move(*p));
  }
  std::vector<Item> merged;
  llvm::StringMap<size_t> byName;
  for (ParsedPTX &p : parsed) {
    // The comments of an item dropped as a duplicate go with the next one.
    std::string carried;
    for (Item &item : p.items) {
      item.comments = std::move(carried) + item.comments;
      carried.clear();
      if (item.name.empty()) {
        merged.push_back(std::move(item));
        continue;
      }
      auto [it, inserted] = byName.try_emplace(item.name, merged.size());
      if (inserted) {
        merged.push_back(std::move(item));
        continue;
      }
      Item &first = merged[it->second];
      if (withoutAlignment(first.text) != withoutAlignment(item.text))
        return std::nullopt;
      if (alignmentOf(item.text) > alignmentOf(first.text))
        first.text = std::move(item.text);
      carried = std::move(item.comments);
    }
  }
  std::string result = parsed[0].header;
  for (const Item &item : merged)
    result += "\n" + item.comments + item.text;
  return result;
}

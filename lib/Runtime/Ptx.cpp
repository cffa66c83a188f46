//===- Ptx.cpp - What the runtime reads from PTX text ---------------------===//

#include "Runtime/Ptx.h"

#include <charconv>

using namespace tessel;

static bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
static bool isIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '%';
}

static std::vector<std::string_view> splitWords(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && isSpace(text[i]))
      ++i;
    size_t start = i;
    while (i < text.size() && !isSpace(text[i]))
      ++i;
    if (i > start)
      words.push_back(text.substr(start, i - start));
  }
  return words;
}

static unsigned typeSize(std::string_view type) {
  static const struct {
    std::string_view name;
    unsigned size;
  } types[] = {{".b8", 1},  {".u8", 1},  {".s8", 1},  {".b16", 2},
               {".u16", 2}, {".s16", 2}, {".f16", 2}, {".bf16", 2},
               {".b32", 4}, {".u32", 4}, {".s32", 4}, {".f32", 4},
               {".b64", 8}, {".u64", 8}, {".s64", 8}, {".f64", 8}};
  for (const auto &t : types)
    if (t.name == type)
      return t.size;
  return 0;
}

// One declaration, e.g. ".param .u64 .ptr .global .align 16 p" or
// ".param .align 2 .b8 h[2]"; returns 0 if it cannot be read.
static unsigned paramSize(std::string_view decl) {
  std::vector<std::string_view> words = splitWords(decl);
  if (words.size() < 3 || words[0] != ".param")
    return 0;
  unsigned size = 0;
  for (size_t i = 1; i + 1 < words.size(); ++i)
    if (unsigned s = typeSize(words[i]))
      size = s;
  std::string_view name = words.back();
  size_t bracket = name.find('[');
  if (size == 0 || bracket == std::string_view::npos)
    return size;
  std::string_view digits = name.substr(bracket + 1);
  if (digits.empty() || digits.back() != ']')
    return 0;
  digits.remove_suffix(1);
  unsigned count = 0;
  const char *last = digits.data() + digits.size();
  auto [end, ec] = std::from_chars(digits.data(), last, count);
  bool ok = ec == std::errc() && end == last && count > 0;
  return ok && count <= (1u << 20) ? size * count : 0;
}

static Result<std::vector<unsigned>> paramSizes(std::string_view list,
                                                std::string_view entry) {
  std::vector<unsigned> sizes;
  if (splitWords(list).empty())
    return sizes;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos)
      comma = list.size();
    std::string_view decl = list.substr(start, comma - start);
    unsigned size = paramSize(decl);
    if (size == 0)
      return Status::error("cannot read parameter " +
                           std::to_string(sizes.size()) + " of PTX entry '" +
                           std::string(entry) + "'");
    sizes.push_back(size);
    start = comma + 1;
  }
  return sizes;
}

Result<std::vector<unsigned>>
tessel::ptxEntryParamSizes(std::string_view ptx, std::string_view entry) {
  static constexpr std::string_view keyword = ".entry";
  for (size_t at = ptx.find(keyword); at != std::string_view::npos;
       at = ptx.find(keyword, at + 1)) {
    size_t p = at + keyword.size();
    if (p >= ptx.size() || !isSpace(ptx[p]))
      continue;
    while (p < ptx.size() && isSpace(ptx[p]))
      ++p;
    size_t nameStart = p;
    while (p < ptx.size() && isIdentChar(ptx[p]))
      ++p;
    if (ptx.substr(nameStart, p - nameStart) != entry)
      continue;
    while (p < ptx.size() && isSpace(ptx[p]))
      ++p;
    if (p >= ptx.size() || ptx[p] != '(')
      return std::vector<unsigned>(); // an entry without parameters
    size_t close = ptx.find(')', p);
    if (close == std::string_view::npos)
      return Status::error("the parameter list of PTX entry '" +
                           std::string(entry) + "' is not closed");
    return paramSizes(ptx.substr(p + 1, close - p - 1), entry);
  }
  return Status::error("the PTX has no entry '" + std::string(entry) + "'");
}

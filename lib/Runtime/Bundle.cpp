//===- Bundle.cpp - The kernel bundle format ------------------------------===//

#include "Runtime/Bundle.h"
#include "Runtime/CudaDriver.h"
#include "Runtime/Json.h"
#include "Runtime/Ptx.h"
#include "Runtime/Support.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>

using namespace tessel;

using Type = JsonValue::Type;

std::optional<Target> tessel::parseTarget(std::string_view text) {
  if (text.substr(0, 3) != "sm_")
    return std::nullopt;
  text.remove_prefix(3);
  Target target;
  if (!text.empty() && text.back() == 'a') {
    target.archSpecific = true;
    text.remove_suffix(1);
  }
  if (text.size() < 2 || text.size() > 3)
    return std::nullopt;
  int number = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    number = number * 10 + (c - '0');
  }
  target.major = number / 10;
  target.minor = number % 10;
  return target;
}

static bool isIdentifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9'))
    return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

static std::optional<ArgKind> argKindFromName(std::string_view name) {
  for (ArgKind kind : {ArgKind::Ptr, ArgKind::I32, ArgKind::I64, ArgKind::F16,
                       ArgKind::BF16, ArgKind::F32})
    if (name == argKindName(kind))
      return kind;
  return std::nullopt;
}

static bool isElementType(std::string_view name) {
  for (std::string_view t :
       {"i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"})
    if (name == t)
      return true;
  return false;
}

static bool isIntegerKind(ArgKind kind) {
  return kind == ArgKind::I32 || kind == ArgKind::I64;
}

/// The name of the grid size in workspace expressions.
static constexpr std::string_view kNumCtas = "num_ctas";
/// The names of the grid's dimensions in tensor map expressions.
static constexpr std::string_view kGridNames[3] = {"grid_x", "grid_y",
                                                   "grid_z"};

/// Names a parameter or constant cannot have.
static bool isReserved(std::string_view name) {
  return name == kNumCtas ||
         std::find(std::begin(kGridNames), std::end(kGridNames), name) !=
             std::end(kGridNames);
}

/// Which reserved names an expression may use.
enum class Reserved { None, NumCtas, Grid };

/// The element types a tensor map can hold: those cuTensorMapEncodeTiled has
/// a data type for. TMA copies bytes without converting them, so i8 data is
/// described as UINT8.
static const struct {
  std::string_view elem;
  unsigned bytes;
  int dataType;
} kTensorMapElements[] = {
    {"f16", 2, cuda::CU_TENSOR_MAP_DATA_TYPE_FLOAT16},
    {"bf16", 2, cuda::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16},
    {"f32", 4, cuda::CU_TENSOR_MAP_DATA_TYPE_FLOAT32},
    {"i32", 4, cuda::CU_TENSOR_MAP_DATA_TYPE_INT32},
    {"i8", 1, cuda::CU_TENSOR_MAP_DATA_TYPE_UINT8},
};

namespace {

/// Checks the JSON tree against the bundle schema while building a Bundle.
/// Errors point at the offending value and, inside a kernel, name it.
class BundleReader {
public:
  BundleReader(std::string_view text, std::string_view name)
      : text(text), name(name) {}
  Result<Bundle> read(const JsonValue &root);

private:
  std::string_view text;
  std::string_view name;
  std::string context; // "kernel 'add': " while reading a kernel
  int64_t version = 0;
  /// Where each kernel's "then" is, by kernel index.
  std::vector<const JsonValue *> thenAt;

  Status errorAt(const JsonValue &at, const std::string &message) const;
  Status checkMembers(const JsonValue &obj,
                      std::initializer_list<std::string_view> allowed) const;
  Status get(const JsonValue &obj, std::string_view key, Type type,
             const JsonValue *&out, bool required = true) const;
  Status getInt(const JsonValue &obj, std::string_view key, int64_t lo,
                int64_t hi, int64_t &out,
                std::optional<int64_t> fallback = std::nullopt) const;
  Status getIdentifier(const JsonValue &obj, std::string_view key,
                       std::string &out) const;

  Status readKernel(const JsonValue &obj, const std::string &ptx,
                    KernelInfo &k);
  Status readParams(const JsonValue &list, KernelInfo &k) const;
  Status readConstants(const JsonValue &obj, KernelInfo &k) const;
  Status readLaunch(const JsonValue &obj, KernelInfo &k);
  Status readTensorMaps(const JsonValue &list, KernelInfo &k);
  Status readTensorMap(const JsonValue &obj, KernelInfo &k);
  Status readExprs(const JsonValue &list, std::string_view key,
                   const KernelInfo &k, std::vector<Expr> &out) const;
  Status checkFollowUp(const Bundle &bundle, size_t index) const;
  Status readExpr(const JsonValue &value, const KernelInfo &k,
                  const std::string &what, Reserved reserved,
                  std::optional<Expr> &out) const;
  Status checkPtxSignature(const JsonValue &at, const KernelInfo &k,
                           const std::string &ptx) const;
};

} // namespace

Status BundleReader::errorAt(const JsonValue &at,
                             const std::string &message) const {
  auto [line, col] = lineAndColumn(text, at.offset);
  return Status::error(std::string(name) + ":" + std::to_string(line) + ":" +
                       std::to_string(col) + ": error: " + context + message);
}

// Unknown members are errors: a misspelt optional field would otherwise be
// silently ignored.
Status BundleReader::checkMembers(
    const JsonValue &obj,
    std::initializer_list<std::string_view> allowed) const {
  for (const auto &[key, value] : obj.object) {
    bool known = false;
    for (std::string_view a : allowed)
      known = known || key == a;
    if (!known)
      return errorAt(value, "unknown member '" + key + "'");
  }
  return Status();
}

Status BundleReader::get(const JsonValue &obj, std::string_view key, Type type,
                         const JsonValue *&out, bool required) const {
  out = obj.find(key);
  if (!out)
    return required ? errorAt(obj, "missing member '" + std::string(key) + "'")
                    : Status();
  if (out->type != type)
    return errorAt(*out, "'" + std::string(key) + "' must be " +
                             jsonTypeName(type) + ", got " +
                             jsonTypeName(out->type));
  return Status();
}

Status BundleReader::getInt(const JsonValue &obj, std::string_view key,
                            int64_t lo, int64_t hi, int64_t &out,
                            std::optional<int64_t> fallback) const {
  const JsonValue *v;
  TESSEL_TRY(get(obj, key, Type::Number, v, !fallback));
  if (!v) {
    out = *fallback;
    return Status();
  }
  if (!v->integer || *v->integer < lo || *v->integer > hi)
    return errorAt(*v, "'" + std::string(key) + "' must be an integer in [" +
                           std::to_string(lo) + ", " + std::to_string(hi) +
                           "]");
  out = *v->integer;
  return Status();
}

Status BundleReader::getIdentifier(const JsonValue &obj, std::string_view key,
                                   std::string &out) const {
  const JsonValue *v;
  TESSEL_TRY(get(obj, key, Type::String, v));
  if (!isIdentifier(v->string))
    return errorAt(*v, "'" + std::string(key) +
                           "' must be an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  out = v->string;
  return Status();
}

Result<Bundle> BundleReader::read(const JsonValue &root) {
  if (root.type != Type::Object)
    return errorAt(root, "a bundle must be a JSON object");
  TESSEL_TRY(checkMembers(
      root, {"format", "version", "target", "producer", "kernels", "ptx"}));
  const JsonValue *format, *target, *producer, *kernels, *ptx;
  TESSEL_TRY(get(root, "format", Type::String, format));
  if (format->string != "tessel-bundle")
    return errorAt(*format, "'format' must be \"tessel-bundle\"");
  TESSEL_TRY(
      getInt(root, "version", 0, std::numeric_limits<int64_t>::max(), version));
  if (version < 1 || version > 7)
    return errorAt(*root.find("version"),
                   "unsupported bundle version " + std::to_string(version) +
                       " (this runtime reads versions 1 to 7)");
  TESSEL_TRY(get(root, "target", Type::String, target));
  if (!parseTarget(target->string))
    return errorAt(*target, "'target' must look like sm_90 or sm_90a");
  // "producer" is for people; it is only type-checked.
  TESSEL_TRY(get(root, "producer", Type::String, producer, false));
  TESSEL_TRY(get(root, "ptx", Type::String, ptx));
  TESSEL_TRY(get(root, "kernels", Type::Array, kernels));
  if (kernels->array.empty())
    return errorAt(*kernels, "'kernels' is empty");

  Bundle bundle;
  bundle.target = target->string;
  for (const JsonValue &v : kernels->array) {
    KernelInfo k;
    TESSEL_TRY(readKernel(v, ptx->string, k));
    for (const KernelInfo &other : bundle.kernels)
      if (other.name == k.name)
        return errorAt(v, "duplicate kernel name");
    bundle.kernels.push_back(std::move(k));
    context.clear();
  }
  for (size_t i = 0; i < bundle.kernels.size(); ++i) {
    context = "kernel '" + bundle.kernels[i].name + "': ";
    TESSEL_TRY(checkFollowUp(bundle, i));
  }
  context.clear();
  bundle.ptx = ptx->string;
  return bundle;
}

Status BundleReader::readKernel(const JsonValue &obj, const std::string &ptx,
                                KernelInfo &k) {
  if (obj.type != Type::Object)
    return errorAt(obj, "a kernel must be a JSON object");
  TESSEL_TRY(getIdentifier(obj, "name", k.name));
  context = "kernel '" + k.name + "': ";
  TESSEL_TRY(
      checkMembers(obj, {"name", "ptx_entry", "num_warps", "shared_bytes",
                         "params", "constants", "launch", "tensor_maps"}));
  TESSEL_TRY(getIdentifier(obj, "ptx_entry", k.ptxEntry));
  int64_t value;
  TESSEL_TRY(getInt(obj, "num_warps", 1, 32, value));
  k.numWarps = int(value);
  TESSEL_TRY(getInt(obj, "shared_bytes", 0, std::numeric_limits<int32_t>::max(),
                    value, 0));
  k.sharedBytes = uint32_t(value);
  const JsonValue *params, *constants, *launch, *maps;
  TESSEL_TRY(get(obj, "params", Type::Array, params));
  TESSEL_TRY(readParams(*params, k));
  TESSEL_TRY(get(obj, "constants", Type::Object, constants, false));
  if (constants)
    TESSEL_TRY(readConstants(*constants, k));
  TESSEL_TRY(get(obj, "launch", Type::Object, launch));
  TESSEL_TRY(readLaunch(*launch, k));
  TESSEL_TRY(get(obj, "tensor_maps", Type::Array, maps, false));
  if (maps)
    TESSEL_TRY(readTensorMaps(*maps, k));
  return checkPtxSignature(obj, k, ptx);
}

Status BundleReader::readParams(const JsonValue &list, KernelInfo &k) const {
  for (const JsonValue &p : list.array) {
    if (p.type != Type::Object)
      return errorAt(p, "a parameter must be a JSON object");
    TESSEL_TRY(
        checkMembers(p, {"name", "kind", "elem", "multiple_of", "none"}));
    ParamInfo info;
    TESSEL_TRY(getIdentifier(p, "name", info.name));
    if (isReserved(info.name))
      return errorAt(p, "'" + info.name + "' is reserved");
    for (const ParamInfo &other : k.params)
      if (other.name == info.name)
        return errorAt(p, "duplicate parameter '" + info.name + "'");
    const JsonValue *kind, *elem;
    TESSEL_TRY(get(p, "kind", Type::String, kind));
    std::optional<ArgKind> argKind = argKindFromName(kind->string);
    if (!argKind)
      return errorAt(*kind, "parameter '" + info.name +
                                "': unknown kind (expected ptr, i32, i64, "
                                "f16, bf16 or f32)");
    info.kind = *argKind;
    bool isPtr = info.kind == ArgKind::Ptr;
    TESSEL_TRY(get(p, "elem", Type::String, elem, isPtr));
    if (elem && !isPtr)
      return errorAt(*elem, "parameter '" + info.name +
                                "': 'elem' applies to pointers only");
    if (elem && !isElementType(elem->string))
      return errorAt(*elem, "parameter '" + info.name +
                                "': unknown element type '" + elem->string +
                                "'");
    info.elem = elem ? elem->string : "";
    if (const JsonValue *hint = p.find("multiple_of")) {
      if (version < 3)
        return errorAt(*hint, "'multiple_of' needs bundle version 3");
      if (!isPtr && !isIntegerKind(info.kind))
        return errorAt(*hint, "parameter '" + info.name +
                                  "': 'multiple_of' applies to ptr, i32 and "
                                  "i64 parameters only");
      TESSEL_TRY(getInt(p, "multiple_of", 1,
                        std::numeric_limits<int64_t>::max(), info.multipleOf));
    }
    if (const JsonValue *none = p.find("none")) {
      if (version < 7)
        return errorAt(*none, "'none' needs bundle version 7");
      if (!isPtr || none->type != Type::Bool || !none->boolean)
        return errorAt(*none, "parameter '" + info.name +
                                  "': 'none' is true, on ptr parameters only");
      info.none = true;
    }
    k.params.push_back(std::move(info));
  }
  return Status();
}

Status BundleReader::readConstants(const JsonValue &obj, KernelInfo &k) const {
  for (const auto &[key, value] : obj.object) {
    if (!isIdentifier(key))
      return errorAt(value,
                     "constant name '" + key + "' must be an identifier");
    if (isReserved(key))
      return errorAt(value, "constant name '" + key + "' is reserved");
    for (const ParamInfo &p : k.params)
      if (p.name == key)
        return errorAt(value, "constant '" + key + "' shadows a parameter");
    if (value.type != Type::Number || !value.integer)
      return errorAt(value, "constant '" + key + "' must be an integer");
    k.constants.emplace_back(key, *value.integer);
  }
  return Status();
}

Status BundleReader::readLaunch(const JsonValue &obj, KernelInfo &k) {
  TESSEL_TRY(checkMembers(obj, {"kind", "grid", "max_ctas", "ctas_per_sm",
                                "workspace_bytes", "workspace_zeroing", "then",
                                "cluster"}));
  const JsonValue *kind, *grid;
  TESSEL_TRY(get(obj, "kind", Type::String, kind));
  LaunchRule &rule = k.launch;
  if (kind->string == "grid") {
    rule.kind = LaunchRule::Kind::Grid;
    for (const char *key : {"max_ctas", "ctas_per_sm"})
      if (const JsonValue *v = obj.find(key))
        return errorAt(*v, "'" + std::string(key) +
                               "' applies to persistent launches only");
    // Without 'grid' the caller gives the grid at each launch.
    grid = obj.find("grid");
    if (grid && (grid->type != Type::Array || grid->array.empty() ||
                 grid->array.size() > 3))
      return errorAt(*grid, "'grid' must have 1 to 3 entries");
    for (size_t i = 0; grid && i < grid->array.size(); ++i) {
      std::optional<Expr> e;
      TESSEL_TRY(readExpr(grid->array[i], k, "grid[" + std::to_string(i) + "]",
                          Reserved::None, e));
      rule.grid.push_back(std::move(*e));
    }
  } else if (kind->string == "persistent") {
    rule.kind = LaunchRule::Kind::Persistent;
    if (const JsonValue *v = obj.find("grid"))
      return errorAt(*v, "persistent launches size their grid from the "
                         "device; use 'max_ctas' to bound it");
    if (const JsonValue *v = obj.find("max_ctas"))
      TESSEL_TRY(readExpr(*v, k, "max_ctas", Reserved::None, rule.maxCtas));
    int64_t ctasPerSM;
    TESSEL_TRY(getInt(obj, "ctas_per_sm", 0, 64, ctasPerSM, 0));
    rule.ctasPerSM = int(ctasPerSM);
  } else {
    return errorAt(*kind, "launch 'kind' must be \"grid\" or \"persistent\"");
  }
  if (const JsonValue *v = obj.find("workspace_bytes"))
    TESSEL_TRY(readExpr(*v, k, "workspace_bytes", Reserved::NumCtas,
                        rule.workspaceBytes));
  const JsonValue *zeroing;
  TESSEL_TRY(get(obj, "workspace_zeroing", Type::String, zeroing, false));
  if (zeroing) {
    if (version < 5)
      return errorAt(*zeroing, "'workspace_zeroing' needs bundle version 5");
    if (!rule.workspaceBytes)
      return errorAt(*zeroing, "'workspace_zeroing' needs 'workspace_bytes'");
    if (zeroing->string == "per_size")
      rule.workspaceZeroing = LaunchRule::Zeroing::PerSize;
    else if (zeroing->string != "per_launch")
      return errorAt(*zeroing, "'workspace_zeroing' must be \"per_launch\" "
                               "or \"per_size\"");
  }
  if (const JsonValue *v = obj.find("cluster")) {
    if (version < 6)
      return errorAt(*v, "'cluster' needs bundle version 6");
    // Hopper runs clusters of up to 16 CTAs (above 8 as a non-portable size).
    int64_t cluster;
    TESSEL_TRY(getInt(obj, "cluster", 1, 16, cluster));
    rule.cluster = int(cluster);
  }
  const JsonValue *then;
  TESSEL_TRY(get(obj, "then", Type::String, then, false));
  if (then && version < 2)
    return errorAt(*then, "'then' needs bundle version 2");
  if (then && !isIdentifier(then->string))
    return errorAt(*then,
                   "'then' must be an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  rule.then = then ? then->string : "";
  thenAt.push_back(then);
  return Status();
}

Status BundleReader::readTensorMaps(const JsonValue &list, KernelInfo &k) {
  if (version < 4)
    return errorAt(list, "'tensor_maps' needs bundle version 4");
  const std::string kernelContext = context;
  for (const JsonValue &map : list.array) {
    TESSEL_TRY(readTensorMap(map, k));
    context = kernelContext;
  }
  return Status();
}

// Checks what cuTensorMapEncodeTiled requires of the map's fixed parts; what
// depends on the launch (the address, dims and strides) is checked at each
// launch.
Status BundleReader::readTensorMap(const JsonValue &obj, KernelInfo &k) {
  if (obj.type != Type::Object)
    return errorAt(obj, "a tensor map must be a JSON object");
  std::string name;
  TESSEL_TRY(getIdentifier(obj, "param", name));
  context += "tensor map of '" + name + "': ";
  TESSEL_TRY(checkMembers(obj, {"param", "dims", "strides", "box", "swizzle"}));
  const JsonValue &at = *obj.find("param");
  auto param = std::find_if(k.params.begin(), k.params.end(),
                            [&](const ParamInfo &p) { return p.name == name; });
  if (param == k.params.end())
    return errorAt(at, "the kernel has no parameter '" + name + "'");
  if (param->kind != ArgKind::Ptr)
    return errorAt(at, "'" + name + "' is a " + argKindName(param->kind) +
                           " parameter; a tensor map needs a ptr");
  if (param->none)
    return errorAt(at, "'" + name +
                           "' is compiled as None; a tensor map needs a "
                           "buffer");
  auto element =
      std::find_if(std::begin(kTensorMapElements), std::end(kTensorMapElements),
                   [&](const auto &e) { return e.elem == param->elem; });
  if (element == std::end(kTensorMapElements))
    return errorAt(at, "TMA cannot copy elements of type '" + param->elem +
                           "' (only f16, bf16, f32, i32 and i8)");
  TensorMapInfo map;
  map.param = uint32_t(param - k.params.begin());
  map.elemBytes = element->bytes;
  map.dataType = element->dataType;

  const JsonValue *dims, *strides, *box, *swizzle;
  TESSEL_TRY(get(obj, "dims", Type::Array, dims));
  size_t rank = dims->array.size();
  if (rank < 1 || rank > TensorMapInfo::kMaxRank)
    return errorAt(*dims, "'dims' must have 1 to " +
                              std::to_string(TensorMapInfo::kMaxRank) +
                              " entries");
  TESSEL_TRY(get(obj, "strides", Type::Array, strides));
  if (strides->array.size() != rank - 1)
    return errorAt(*strides, "'strides' must have " + std::to_string(rank - 1) +
                                 " entries, one per dim after the first");
  TESSEL_TRY(readExprs(*dims, "dims", k, map.dims));
  TESSEL_TRY(readExprs(*strides, "strides", k, map.strides));

  TESSEL_TRY(get(obj, "box", Type::Array, box));
  if (box->array.size() != rank)
    return errorAt(*box, "'box' must have " + std::to_string(rank) +
                             " entries, one per dim");
  for (size_t i = 0; i < rank; ++i) {
    const JsonValue &v = box->array[i];
    if (v.type != Type::Number || !v.integer || *v.integer < 1 ||
        *v.integer > 256)
      return errorAt(v, "box[" + std::to_string(i) +
                            "] must be an integer in [1, 256]");
    map.box.push_back(uint32_t(*v.integer));
  }
  TESSEL_TRY(get(obj, "swizzle", Type::Number, swizzle, false));
  if (swizzle) {
    std::optional<int64_t> bytes = swizzle->integer;
    if (!bytes ||
        (*bytes != 0 && *bytes != 32 && *bytes != 64 && *bytes != 128))
      return errorAt(*swizzle, "'swizzle' must be 0, 32, 64 or 128");
    map.swizzle = unsigned(*bytes);
  }
  // TMA moves the innermost dimension in 16-byte units, and a swizzled
  // box's rows must fit in the swizzle's span.
  uint64_t rowBytes = uint64_t(map.box[0]) * map.elemBytes;
  std::string row = "box[0] = " + std::to_string(map.box[0]) + " elements of " +
                    param->elem + " (" + std::to_string(rowBytes) + " bytes)";
  if (rowBytes % 16 != 0)
    return errorAt(box->array[0], row + " is not a multiple of 16 bytes");
  if (map.swizzle && rowBytes > map.swizzle)
    return errorAt(box->array[0], row + " is wider than the " +
                                      std::to_string(map.swizzle) +
                                      "-byte swizzle");
  k.tensorMaps.push_back(std::move(map));
  return Status();
}

/// The expressions of a tensor map's `dims` or `strides`, which may use the
/// launch's grid.
Status BundleReader::readExprs(const JsonValue &list, std::string_view key,
                               const KernelInfo &k,
                               std::vector<Expr> &out) const {
  for (size_t i = 0; i < list.array.size(); ++i) {
    std::optional<Expr> e;
    TESSEL_TRY(readExpr(list.array[i], k,
                        std::string(key) + "[" + std::to_string(i) + "]",
                        Reserved::Grid, e));
    out.push_back(std::move(*e));
  }
  return Status();
}

static bool sameTensorMap(const TensorMapInfo &a, const TensorMapInfo &b) {
  return a.param == b.param && a.dims == b.dims && a.strides == b.strides &&
         a.box == b.box && a.swizzle == b.swizzle;
}

// The follow-up runs on its leader's grid with its arguments and workspace,
// so the two must agree on them; chains and shared follow-ups are not
// launched, so they are errors.
Status BundleReader::checkFollowUp(const Bundle &bundle, size_t index) const {
  const KernelInfo &k = bundle.kernels[index];
  const std::string &then = k.launch.then;
  if (then.empty())
    return Status();
  const JsonValue &at = *thenAt[index];
  const KernelInfo *next = nullptr;
  for (const KernelInfo &other : bundle.kernels) {
    if (&other != &k && other.launch.then == then)
      return errorAt(at, "kernel '" + then +
                             "' is also the 'then' of kernel '" + other.name +
                             "'");
    if (other.name == then)
      next = &other;
  }
  if (!next)
    return errorAt(at, "'then' names kernel '" + then +
                           "', which the bundle does not have");
  if (next == &k)
    return errorAt(at, "'then' names the kernel itself");
  if (!next->launch.then.empty())
    return errorAt(at, "'then' names kernel '" + then +
                           "', which has a 'then' of its own");
  // Launches check the leader's hints and null pointers only, so they must
  // be the follow-up's.
  bool sameParams =
      next->params.size() == k.params.size() &&
      std::equal(k.params.begin(), k.params.end(), next->params.begin(),
                 [](const ParamInfo &a, const ParamInfo &b) {
                   return a.name == b.name && a.kind == b.kind &&
                          a.elem == b.elem && a.multipleOf == b.multipleOf &&
                          a.none == b.none;
                 });
  if (!sameParams)
    return errorAt(at, "kernel '" + then +
                           "' must take the same parameters to run as its "
                           "'then'");
  // It receives the leader's tensor maps too.
  if (next->tensorMaps.size() != k.tensorMaps.size() ||
      !std::equal(k.tensorMaps.begin(), k.tensorMaps.end(),
                  next->tensorMaps.begin(), sameTensorMap))
    return errorAt(at, "kernel '" + then +
                           "' must have the same tensor maps to run as its "
                           "'then'");
  if (next->launch.kind != k.launch.kind ||
      next->launch.workspaceBytes.has_value() !=
          k.launch.workspaceBytes.has_value())
    return errorAt(at, "kernel '" + then +
                           "' must have the same launch kind and workspace "
                           "to run as its 'then'");
  // The leader's grid is a multiple of its cluster size, so it is one of
  // the follow-up's whenever the follow-up's divides the leader's.
  if (k.launch.cluster % next->launch.cluster != 0)
    return errorAt(at, "kernel '" + then +
                           "' must have a cluster size that divides " +
                           std::to_string(k.launch.cluster) + " (it has " +
                           std::to_string(next->launch.cluster) +
                           ") to run as its 'then'");
  return Status();
}

Status BundleReader::readExpr(const JsonValue &value, const KernelInfo &k,
                              const std::string &what, Reserved reserved,
                              std::optional<Expr> &out) const {
  std::string source;
  if (value.type == Type::String)
    source = value.string;
  else if (value.type == Type::Number && value.integer)
    source = std::to_string(*value.integer);
  else
    return errorAt(value, what + " must be an expression string or integer");

  auto resolve = [&](std::string_view id) -> Result<Expr::Symbol> {
    if (id == kNumCtas && reserved == Reserved::NumCtas)
      return Expr::Symbol{Expr::Symbol::Slot, int64_t(k.numCtasSlot())};
    for (int axis = 0; axis < 3; ++axis)
      if (id == kGridNames[axis] && reserved == Reserved::Grid)
        return Expr::Symbol{Expr::Symbol::Slot, int64_t(k.gridSlot(axis))};
    for (const auto &[constName, constValue] : k.constants)
      if (constName == id)
        return Expr::Symbol{Expr::Symbol::Constant, constValue};
    for (size_t i = 0; i < k.params.size(); ++i) {
      if (k.params[i].name != id)
        continue;
      if (isIntegerKind(k.params[i].kind))
        return Expr::Symbol{Expr::Symbol::Slot, int64_t(i)};
      return Status::error("'" + std::string(id) + "' is a " +
                           argKindName(k.params[i].kind) +
                           " parameter; only integer parameters and "
                           "constants can appear");
    }
    if (id == kNumCtas)
      return Status::error("num_ctas can only appear in workspace_bytes");
    if (isReserved(id))
      return Status::error(std::string(id) + " can only appear in tensor maps");
    return Status::error("unknown name '" + std::string(id) + "'");
  };
  Result<Expr> expr = Expr::parse(source, resolve);
  if (!expr.ok())
    return errorAt(value, what + ": " + expr.message());
  out = std::move(*expr);
  return Status();
}

Status BundleReader::checkPtxSignature(const JsonValue &at, const KernelInfo &k,
                                       const std::string &ptx) const {
  Result<std::vector<unsigned>> sizes = ptxEntryParamSizes(ptx, k.ptxEntry);
  if (!sizes.ok())
    return errorAt(at, sizes.message());
  bool workspace = k.launch.workspaceBytes.has_value();
  size_t maps = k.tensorMaps.size();
  std::string entry = "PTX entry '" + k.ptxEntry + "'";
  if (sizes->size() != k.params.size() + maps + workspace)
    return errorAt(at, "the bundle lists " + std::to_string(k.params.size()) +
                           " parameters" +
                           (maps ? " plus " + std::to_string(maps) +
                                       " tensor map" + (maps > 1 ? "s" : "")
                                 : "") +
                           (workspace ? " plus the workspace pointer" : "") +
                           " but " + entry + " has " +
                           std::to_string(sizes->size()));
  for (size_t i = 0; i < k.params.size(); ++i) {
    const ParamInfo &p = k.params[i];
    if ((*sizes)[i] != argKindSize(p.kind))
      return errorAt(
          at, "parameter '" + p.name + "' is " + argKindName(p.kind) + " (" +
                  std::to_string(argKindSize(p.kind)) + " bytes) but " + entry +
                  " declares " + std::to_string((*sizes)[i]) + " bytes");
  }
  for (size_t i = 0; i < maps; ++i) {
    unsigned size = (*sizes)[k.params.size() + i];
    if (size != sizeof(cuda::CUtensorMap))
      return errorAt(at, "the tensor map of '" +
                             k.params[k.tensorMaps[i].param].name + "' is a " +
                             std::to_string(sizeof(cuda::CUtensorMap)) +
                             "-byte CUtensorMap but " + entry + " declares " +
                             std::to_string(size) + " bytes");
  }
  if (workspace && sizes->back() != 8)
    return errorAt(at, "the workspace pointer (the last parameter of " + entry +
                           ") must be 8 bytes");
  return Status();
}

Result<Bundle> tessel::parseBundle(std::string_view text,
                                   std::string_view name) {
  Result<JsonValue> root = parseJson(text, name);
  if (!root.ok())
    return root.status();
  return BundleReader(text, name).read(*root);
}

Result<Bundle> tessel::readBundleFile(const std::string &path) {
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    return Status::error("cannot open bundle '" + path +
                         "': " + std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    text.append(buffer, n);
  int readError = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (readError)
    return Status::error("cannot read bundle '" + path +
                         "': " + std::strerror(readError));
  return parseBundle(text, path);
}

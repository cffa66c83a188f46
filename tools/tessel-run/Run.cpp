//===- Run.cpp - What tessel-run's GPU and interpreter paths share --------===//

#include "Run.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

namespace tessel::run {

void printUsage() {
  std::printf(
      "Run a Tessel kernel on seeded or file inputs and print the time.\n\n"
      "  tessel-run FILE.bundle [--kernel NAME] [--grid X[,Y[,Z]]] ARGS\n"
      "  tessel-run FILE.tsl|FILE.mlir --kernel NAME [-D NAME=VALUE ...]\n"
      "             --grid X[,Y[,Z]] [--stage=source|expanded|lowered]\n"
      "             [--stream-k=persistent|split-k] ARGS\n\n"
      "A bundle (tesselc --emit=bundle) runs on the GPU; a .tsl or .mlir\n"
      "kernel on the CPU interpreter (builds with the compiler only).\n\n"
      "  --kernel NAME          the kernel (default: a bundle's only one)\n"
      "  -D NAME=VALUE          constexpr value (.tsl)\n"
      "  --grid X[,Y[,Z]]       programs (CTAs) along x, y, z; a persistent\n"
      "                         kernel on the GPU sizes its own grid, on the\n"
      "                         interpreter it runs X programs (default 1)\n"
      "  --stage=S              source, expanded or lowered (default; what\n"
      "                         the GPU runs) form of a .tsl/.mlir kernel\n"
      "  --stream-k=S           how `lowered` lowers stream_k: persistent\n"
      "                         (default) or split-k (the kernel, then its\n"
      "                         combine kernel on the same grid)\n"
      "  --arg NAME=SPEC        a kernel argument: a scalar (1024, 0.125) or\n"
      "                         a buffer TYPE[N] (TYPE: i1 i32 i64 f16 bf16\n"
      "                         f32) with :zeros (default), :rand (uniform in\n"
      "                         [-1, 1)), :randn, :fill=V or :file=PATH (N\n"
      "                         little-endian float64, rounded to TYPE)\n"
      "  --save NAME=PATH       write a buffer as float64 after the run\n"
      "  --seed N               seed for :rand and :randn (default 0)\n"
      "  --repeat N             timed runs, each from the same inputs; the\n"
      "                         median is printed (default 1)\n"
      "  --warmup N             untimed runs first (default 1 on the GPU,\n"
      "                         0 on the interpreter)\n"
      "  --device N             CUDA device (default 0)\n"
      "  --driver-library PATH  the CUDA driver to open (default\n"
      "                         libcuda.so.1)\n");
}

int fail(const std::string &message) {
  std::fprintf(stderr, "tessel-run: error: %s\n", message.c_str());
  return 1;
}

static bool parseUnsigned(const std::string &text, uint64_t max,
                          uint64_t &value) {
  if (text.empty() || text[0] == '-' || text[0] == '+')
    return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (*end || errno || v > max)
    return false;
  value = v;
  return true;
}

/// NAME=VALUE with a non-empty NAME.
static bool splitPair(const std::string &text,
                      std::pair<std::string, std::string> &pair) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return false;
  pair = {text.substr(0, eq), text.substr(eq + 1)};
  return true;
}

bool parseCommandLine(int argc, char **argv, Options &options,
                      std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      options.help = true;
      continue;
    }
    // `-D NAME=VALUE` and `-DNAME=VALUE`, as tesselc takes them.
    if (arg.rfind("-D", 0) == 0) {
      if (arg.size() == 2 && i + 1 == argc)
        return error = "-D needs NAME=VALUE", false;
      std::string define = arg.size() > 2 ? arg.substr(2) : argv[++i];
      std::pair<std::string, std::string> pair;
      if (!splitPair(define, pair))
        return error = "-D expects NAME=VALUE, got '" + define + "'", false;
      options.defines.push_back(define);
      continue;
    }
    if (arg.empty() || arg[0] != '-') {
      if (!options.input.empty())
        return error = "more than one input file ('" + options.input +
                       "' and '" + arg + "')",
               false;
      options.input = arg;
      continue;
    }
    if (arg.rfind("--", 0) != 0)
      return error = "unknown option '" + arg + "' (see --help)", false;
    // `--name value` or `--name=value`.
    std::string name = arg.substr(2), value;
    size_t eq = name.find('=');
    bool hasValue = eq != std::string::npos;
    if (hasValue) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[i + 1];
    }
    auto needValue = [&] {
      if (!hasValue && i + 1 == argc)
        return error = "--" + name + " needs a value", false;
      if (!hasValue)
        ++i;
      return true;
    };
    auto number = [&](uint64_t max, uint64_t &out) {
      if (!needValue())
        return false;
      if (!parseUnsigned(value, max, out))
        return error = "--" + name + " expects an integer in [0, " +
                       std::to_string(max) + "], got '" + value + "'",
               false;
      return true;
    };
    auto pair = [&](const char *what, auto &list) {
      std::pair<std::string, std::string> p;
      if (!needValue())
        return false;
      if (!splitPair(value, p))
        return error =
                   "--" + name + " expects " + what + ", got '" + value + "'",
               false;
      list.push_back(std::move(p));
      return true;
    };
    uint64_t n = 0;
    if (name == "kernel") {
      if (!needValue())
        return false;
      options.kernel = value;
    } else if (name == "grid") {
      if (!needValue())
        return false;
      options.grid = value;
    } else if (name == "stage") {
      if (!needValue())
        return false;
      if (value != "source" && value != "expanded" && value != "lowered")
        return error = "--stage expects source, expanded or lowered, got '" +
                       value + "'",
               false;
      options.stage = value;
    } else if (name == "stream-k") {
      if (!needValue())
        return false;
      // Checked by name here: this file also builds without MLIR.
      if (value != "persistent" && value != "split-k")
        return error = "--stream-k expects persistent or split-k, got '" +
                       value + "'",
               false;
      options.streamK = value;
    } else if (name == "arg") {
      if (!pair("NAME=SPEC", options.args))
        return false;
    } else if (name == "save") {
      if (!pair("NAME=PATH", options.saves))
        return false;
    } else if (name == "seed") {
      if (!number(UINT64_MAX, options.seed))
        return false;
    } else if (name == "repeat") {
      if (!number(1000000, n))
        return false;
      if (n == 0)
        return error = "--repeat expects at least 1 run", false;
      options.repeat = unsigned(n);
    } else if (name == "warmup") {
      if (!number(1000000, n))
        return false;
      options.warmup = unsigned(n);
    } else if (name == "device") {
      if (!number(INT32_MAX, n))
        return false;
      options.device = int(n);
    } else if (name == "driver-library") {
      if (!needValue())
        return false;
      options.driverLibrary = value;
    } else {
      return error = "unknown option '" + arg + "' (see --help)", false;
    }
  }
  if (options.input.empty() && !options.help)
    return error = "no input file (see --help)", false;
  return true;
}

bool parseGrid(const std::string &spec, std::array<int64_t, 3> &grid) {
  grid = {1, 1, 1};
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    size_t comma = spec.find(',', pos);
    uint64_t v;
    if (!parseUnsigned(spec.substr(pos, comma - pos), INT32_MAX, v))
      return false;
    grid[i] = int64_t(v);
    if (comma == std::string::npos)
      return true;
    pos = comma + 1;
  }
  return false;
}

/// Fills a fresh buffer as SPEC's initialiser says.
static bool makeBuffer(const Param &param, const std::string &spec,
                       std::mt19937_64 &rng, Memory &memory, int &id,
                       std::string &error) {
  const std::string &name = param.name;
  size_t open = spec.find('['), close = spec.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open)
    return error =
               "argument '" + name + "': expected TYPE[N], got '" + spec + "'",
           false;
  std::optional<DType> type = dtypeNamed(spec.substr(0, open));
  uint64_t n = 0;
  if (!type ||
      !parseUnsigned(spec.substr(open + 1, close - open - 1), INT64_MAX, n))
    return error = "argument '" + name + "': bad buffer '" + spec + "'", false;
  if (*type != param.elem)
    return error = "argument '" + name + "': the kernel takes a pointer to " +
                   dtypeName(param.elem) + ", got '" + spec + "'",
           false;
  id = memory.allocate(*type, n);
  std::string init = spec.substr(close + 1);
  std::vector<double> values(n, 0.0);
  if (init.empty() || init == ":zeros") {
  } else if (init == ":rand" || init == ":randn") {
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    std::normal_distribution<double> normal;
    for (double &v : values)
      v = init == ":rand" ? uniform(rng) : normal(rng);
  } else if (init.rfind(":fill=", 0) == 0) {
    char *end = nullptr;
    double v = std::strtod(init.c_str() + 6, &end);
    if (*end || init.size() == 6)
      return error = "argument '" + name + "': bad fill value", false;
    std::fill(values.begin(), values.end(), v);
  } else if (init.rfind(":file=", 0) == 0) {
    std::ifstream in(init.substr(6), std::ios::binary);
    in.read(reinterpret_cast<char *>(values.data()), n * sizeof(double));
    if (!in || in.gcount() != static_cast<std::streamsize>(n * sizeof(double)))
      return error = "argument '" + name + "': cannot read " +
                     std::to_string(n) + " float64 values from '" +
                     init.substr(6) + "'",
             false;
  } else {
    return error = "argument '" + name + "': unknown initialiser '" + init +
                   "' (zeros, rand, randn, fill=V, file=PATH)",
           false;
  }
  memory.write(id, values);
  return true;
}

bool makeInputs(const std::string &kernel, const std::vector<Param> &params,
                const Options &options, Inputs &inputs, std::string &error) {
  std::map<std::string, std::string> given;
  for (const auto &[name, spec] : options.args)
    if (!given.emplace(name, spec).second)
      return error = "argument '" + name + "' is given twice", false;
  std::mt19937_64 rng(options.seed);
  for (const Param &param : params) {
    auto it = given.find(param.name);
    if (param.none) {
      if (it != given.end())
        return error = "kernel '" + kernel + "', argument '" + param.name +
                       "': the kernel was compiled with it None; give no "
                       "--arg for it",
               false;
      int id = inputs.memory.allocate(param.elem, 0);
      inputs.args.push_back(KernelArg::ofBuffer(id));
      continue;
    }
    if (it == given.end())
      return error =
                 "kernel '" + kernel + "' needs --arg " + param.name + "=...",
             false;
    const std::string &spec = it->second;
    const char *text = spec.c_str();
    char *end = nullptr;
    switch (param.kind) {
    case KernelArg::Kind::Buffer: {
      int id;
      if (!makeBuffer(param, spec, rng, inputs.memory, id, error))
        return false;
      inputs.buffers[param.name] = id;
      inputs.args.push_back(KernelArg::ofBuffer(id));
      break;
    }
    case KernelArg::Kind::Int: {
      errno = 0;
      long long v = std::strtoll(text, &end, 0);
      if (*end || spec.empty() || errno)
        return error = "argument '" + param.name + "' expects an integer",
               false;
      inputs.args.push_back(KernelArg::ofInt(v));
      break;
    }
    case KernelArg::Kind::Float: {
      double v = std::strtod(text, &end);
      if (*end || spec.empty())
        return error = "argument '" + param.name + "' expects a number", false;
      inputs.args.push_back(KernelArg::ofFloat(v));
      break;
    }
    }
    given.erase(it);
  }
  if (!given.empty())
    return error = "kernel '" + kernel + "' has no parameter '" +
                   given.begin()->first + "'",
           false;
  return true;
}

bool saveBuffers(const Options &options, const Inputs &inputs,
                 std::string &error) {
  for (const auto &[name, path] : options.saves) {
    auto it = inputs.buffers.find(name);
    if (it == inputs.buffers.end())
      return error = "--save " + name + "=" + path +
                     ": no buffer argument of that name",
             false;
    std::vector<double> values = inputs.memory.read(it->second);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(values.data()),
              values.size() * sizeof(double));
    if (!out)
      return error = "cannot write '" + path + "'", false;
  }
  return true;
}

bool timeRuns(const Options &options, unsigned defaultWarmup,
              const TimedRun &run, double &median, std::string &error) {
  double ms;
  for (unsigned i = options.warmup.value_or(defaultWarmup); i > 0; --i)
    if (!run(ms, error))
      return false;
  std::vector<double> times;
  for (unsigned i = 0; i < options.repeat; ++i) {
    if (!run(ms, error))
      return false;
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  size_t mid = times.size() / 2;
  median = times.size() % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
  return true;
}

void report(const std::string &kernel, const std::string &where,
            const std::array<int64_t, 3> &grid, double ms,
            const Options &options) {
  std::printf("kernel '%s' ran on %s: grid %" PRId64 "x%" PRId64 "x%" PRId64
              ", %.3f ms",
              kernel.c_str(), where.c_str(), grid[0], grid[1], grid[2], ms);
  if (options.repeat > 1)
    std::printf(" (median of %u runs)", options.repeat);
  std::printf("\n");
}

} // namespace tessel::run

#include "tessel/Runtime.h"

#include <cstdio>
#include <vector>

using namespace tessel;

// out = x + y with the `add` kernel of add.tsl (tesselc add.tsl --emit=bundle
// -o add.bundle): 1 + 2 everywhere.
static Status addVectors(Runtime &rt, const std::string &bundle) {
  Result<Module> mod = rt.loadBundle(bundle); // PTX + launch metadata
  if (!mod.ok())
    return mod.status();
  Result<Kernel> add = mod->kernel("add");
  if (!add.ok())
    return add.status();
  const int n = 1000, bytes = n * 4;
  std::vector<float> x(n, 1.0f), y(n, 2.0f), out(n);
  Result<DevicePtr> dx = rt.alloc(bytes), dy = rt.alloc(bytes),
                    dout = rt.alloc(bytes);
  Status s = !dx.ok() ? dx.status() : !dy.ok() ? dy.status() : dout.status();
  if (s.ok())
    s = rt.copyToDevice(*dx, x.data(), bytes);
  if (s.ok())
    s = rt.copyToDevice(*dy, y.data(), bytes);
  if (s.ok()) // the caller gives add's grid: cdiv(n, BLOCK) programs
    s = rt.launch(*add,
                  {Arg::ptr(*dx), Arg::ptr(*dy), Arg::ptr(*dout), Arg::i32(n)},
                  Grid{1, 1, 1});
  if (s.ok())
    s = rt.copyToHost(out.data(), *dout, bytes); // waits for the kernel
  for (const Result<DevicePtr> &p : {dx, dy, dout})
    if (p.ok())
      (void)rt.free(*p);
  if (s.ok())
    std::printf("out[0] = %g, out[%d] = %g\n", out[0], n - 1, out[n - 1]);
  return s;
}

int main(int argc, char **argv) {
  // Device 0's primary context; without a driver or a GPU, an error saying so.
  Result<std::unique_ptr<Runtime>> rt = Runtime::create();
  Status s = rt.ok() ? addVectors(**rt, argc > 1 ? argv[1] : "add.bundle")
                     : rt.status();
  if (!s.ok())
    std::fprintf(stderr, "%s\n", s.message().c_str());
  return s.ok() ? 0 : 1;
}

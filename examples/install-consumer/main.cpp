// tessel-consumer [ADD.bundle]: reports the GPU that Tessel's runtime finds,
// or why there is none; given a bundle of an elementwise add(x, y, out, n)
// (tesselc examples/runtime/add.tsl --emit=bundle -o add.bundle), launches it
// on 1000 elements with the bundle's own grid rule and prints out = x + y.

#include "tessel/Runtime.h"

#include <cstdio>
#include <vector>

using namespace tessel;

static Status launchAdd(Runtime &rt, const std::string &path) {
  Result<Module> mod = rt.loadBundle(path);
  if (!mod.ok())
    return mod.status();
  std::vector<Kernel> kernels = mod->kernels();
  if (kernels.empty())
    return Status::error(path + ": no kernel");
  const Kernel &add = kernels.front();
  const int n = 1000, bytes = n * sizeof(float);
  std::vector<float> x(n, 1.0f), y(n, 2.0f), out(n);
  std::vector<DevicePtr> buffers;
  Status s;
  for (int i = 0; i < 3 && s.ok(); ++i) {
    Result<DevicePtr> p = rt.alloc(bytes);
    s = p.status();
    if (p.ok())
      buffers.push_back(*p);
  }
  if (s.ok())
    s = rt.copyToDevice(buffers[0], x.data(), bytes);
  if (s.ok())
    s = rt.copyToDevice(buffers[1], y.data(), bytes);
  if (s.ok())
    s = rt.launch(add, {Arg::ptr(buffers[0]), Arg::ptr(buffers[1]),
                        Arg::ptr(buffers[2]), Arg::i32(n)});
  if (s.ok())
    s = rt.copyToHost(out.data(), buffers[2], bytes); // waits for the kernel
  for (DevicePtr p : buffers)
    (void)rt.free(p);
  if (s.ok())
    std::printf("%s: out[0] = %g, out[%d] = %g\n", add.name().c_str(), out[0],
                n - 1, out[n - 1]);
  return s;
}

int main(int argc, char **argv) {
  // Device 0; without a driver or a GPU, an error saying so.
  Result<std::unique_ptr<Runtime>> rt = Runtime::create();
  if (!rt.ok()) {
    std::fprintf(stderr, "tessel-consumer: %s\n", rt.message().c_str());
    return 1;
  }
  auto [major, minor] = (*rt)->computeCapability();
  std::printf("GPU: compute capability %d.%d, %d SMs\n", major, minor,
              (*rt)->multiprocessorCount());
  Status s = argc > 1 ? launchAdd(**rt, argv[1]) : Status();
  if (!s.ok())
    std::fprintf(stderr, "tessel-consumer: %s\n", s.message().c_str());
  return s.ok() ? 0 : 1;
}

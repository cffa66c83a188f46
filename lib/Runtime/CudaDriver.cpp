//===- CudaDriver.cpp - The CUDA Driver API, opened at run time -----------===//

#include "Runtime/CudaDriver.h"

#include <dlfcn.h>
#include <map>
#include <memory>
#include <mutex>

using namespace tessel;
using namespace tessel::cuda;

Result<const CudaDriver *> CudaDriver::load(const std::string &library) {
  // Never destroyed: a Runtime may outlive static destructors at exit.
  static std::mutex *mutex = new std::mutex;
  static auto *loaded = new std::map<std::string, std::unique_ptr<CudaDriver>>;
  std::lock_guard<std::mutex> lock(*mutex);
  auto it = loaded->find(library);
  if (it != loaded->end())
    return static_cast<const CudaDriver *>(it->second.get());

  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return Status::error("no CUDA driver found (" + library + ": " + dlerror() +
                         ")");
  std::unique_ptr<CudaDriver> driver(new CudaDriver);
  for (const Symbol &symbol : driver->symbols) {
    *symbol.address = dlsym(handle, symbol.name);
    if (!*symbol.address && symbol.fallback)
      *symbol.address = dlsym(handle, symbol.fallback);
    if (!*symbol.address && !symbol.optional) {
      dlclose(handle); // nothing of it is in use yet
      return Status::error("the CUDA driver " + library + " has no " +
                           symbol.name + " (driver too old?)");
    }
  }
  const CudaDriver *result = driver.get();
  loaded->emplace(library, std::move(driver));
  return result;
}

std::string CudaDriver::describe(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    return "CUresult " + std::to_string(result);
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS || !text)
    return name;
  return std::string(name) + " (" + text + ")";
}

Status CudaDriver::check(CUresult result, const char *call) const {
  if (result == CUDA_SUCCESS)
    return Status();
  return Status::error(std::string(call) + " failed: " + describe(result));
}

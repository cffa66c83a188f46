/* tessel-compile-consumer [TARGET]: compiles a vector add kernel through the
   C API of Tessel's compiler library to a kernel bundle for TARGET (default
   sm_90a) and reports the PTX entry it holds; then compiles a kernel with an
   error and prints the diagnostic, which names file:line:col. */

#include "tessel-c/Compiler.h"

#include <stdio.h>
#include <string.h>

static const char *add = "@kernel(num_warps=4)\n"
                         "def add(x: ptr[f32], y: ptr[f32], out: ptr[f32], n: "
                         "i32, BLOCK: constexpr = 256):\n"
                         "    offs = program_id(0) * BLOCK + arange(0, BLOCK)\n"
                         "    m = offs < n\n"
                         "    store(out + offs, load(x + offs, mask=m) + "
                         "load(y + offs, mask=m), mask=m)\n";

static const char *broken = "@kernel(num_warps=4)\n"
                            "def broken(x: ptr[f32]):\n"
                            "    store(x, undefined_name)\n";

int main(int argc, char **argv) {
  const char *names[] = {"BLOCK"}, *values[] = {"128"};
  TesselCompileOptions options = {
      add,    "add.tsl", "add", names,
      values, 1,         NULL,  argc > 1 ? argv[1] : "sm_90a"};
  TesselResult *result = tesselCompile(&options);
  if (tesselResultStatus(result) != TesselOk) {
    fprintf(stderr, "%s\n", tesselResultText(result));
    tesselResultDestroy(result);
    return 1;
  }
  const char *bundle = tesselResultText(result);
  printf("compiled add for %s with Tessel %s: %zu bytes of bundle, %s\n",
         options.target, tesselCompilerVersion(), strlen(bundle),
         strstr(bundle, ".entry add") ? "PTX entry add" : "no PTX entry");
  int ok = strstr(bundle, ".entry add") != NULL;
  tesselResultDestroy(result);

  options.source = broken;
  options.filename = "broken.tsl";
  options.kernel = NULL;
  options.numDefines = 0;
  result = tesselCompile(&options);
  ok = ok && tesselResultStatus(result) == TesselCompileError &&
       tesselResultNumDiagnostics(result) > 0;
  if (ok) {
    TesselDiagnostic d = tesselResultDiagnostic(result, 0);
    printf("diagnostic: %s:%u:%u: %s: %s\n", d.filename, d.line, d.column,
           d.severity, d.message);
  }
  tesselResultDestroy(result);
  return ok ? 0 : 1;
}

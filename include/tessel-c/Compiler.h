/*===- Compiler.h - C API of Tessel's compiler and interpreter ----*- C -*-===*\
|*                                                                            *|
|* The compiler (front end, tile passes, NVPTX back end) and the CPU          *|
|* interpreter behind a small C interface: one shared library, which may      *|
|* carry LLVM/MLIR inside it, serves every Python version (the extension      *|
|* module opens it at run time) and any C or C++ program.                     *|
|*                                                                            *|
|* Strings passed in are NUL-terminated UTF-8 and only read during the call. *|
|* Every call that can fail returns a TesselResult (never NULL), which the    *|
|* caller releases with tesselResultDestroy; the pointers it hands out live   *|
|* as long as it does. The library is safe to call from several threads;     *|
|* runs of one TesselProgram are serialised.                                  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TESSEL_C_COMPILER_H
#define TESSEL_C_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TESSEL_C_API __attribute__((visibility("default")))

/* Changes whenever a declaration below changes: a loader built against
   another version refuses the library instead of calling it wrongly. */
#define TESSEL_COMPILER_API_VERSION 1

TESSEL_C_API unsigned tesselCompilerApiVersion(void);
/* The Tessel release the library was built from, e.g. "0.1.0". */
TESSEL_C_API const char *tesselCompilerVersion(void);
/* The library's GNU build ID in hex (a hash of its contents the linker
   writes), or "" when it was linked without one: what a cache of compiled
   kernels keys on, without reading the library. */
TESSEL_C_API const char *tesselCompilerBuildId(void);

typedef enum TesselStatus {
  TesselOk = 0,
  /* The DSL is wrong: diagnostics name file:line:col. */
  TesselCompileError = 1,
  /* An option or argument is wrong (unknown target, bad buffer size...). */
  TesselInvalidArgument = 2,
  /* The interpreter stopped on a fault in the kernel (out of bounds...). */
  TesselLaunchError = 3,
} TesselStatus;

typedef struct TesselResult TesselResult;

typedef struct TesselDiagnostic {
  const char *severity; /* "error", "warning" or "note" */
  const char *filename;
  unsigned line, column; /* 1-based; 0: no location */
  const char *message;
} TesselDiagnostic;

TESSEL_C_API TesselStatus tesselResultStatus(const TesselResult *result);
/* TesselOk: what the call produces (IR, a bundle, JSON). Otherwise the error
   as a user should read it (for a compile error: every diagnostic with its
   source line). */
TESSEL_C_API const char *tesselResultText(const TesselResult *result);
TESSEL_C_API size_t tesselResultNumDiagnostics(const TesselResult *result);
TESSEL_C_API TesselDiagnostic tesselResultDiagnostic(const TesselResult *result,
                                                     size_t index);
TESSEL_C_API void tesselResultDestroy(TesselResult *result);

typedef struct TesselCompileOptions {
  const char *source;
  /* For diagnostics, and where `from MODULE import ...` finds MODULE.tsl:
     beside it (in the working directory for a name such as "<string>"). */
  const char *filename;
  const char *kernel; /* NULL or "": every kernel of the source */
  /* Constexpr values as DSL text ("64", "True", "bf16"). */
  const char *const *defineNames;
  const char *const *defineValues;
  size_t numDefines;
  /* How stream_k loops lower: "persistent" (NULL) or "split-k". */
  const char *streamK;
  /* NULL: the lowered tessel IR, printed with its .tsl locations (what the
     interpreter runs). "sm_80", "sm_90" or "sm_90a": a kernel bundle (JSON:
     PTX and launch metadata, docs/bundle.md). */
  const char *target;
} TesselCompileOptions;

TESSEL_C_API TesselResult *tesselCompile(const TesselCompileOptions *options);

/* Lowered tessel IR parsed once, whose kernels run on the CPU interpreter. */
typedef struct TesselProgram TesselProgram;

/* NULL on failure, with the reason in *error (which the caller destroys). */
TESSEL_C_API TesselProgram *
tesselProgramCreate(const char *ir, const char *name, TesselResult **error);
TESSEL_C_API void tesselProgramDestroy(TesselProgram *program);

/* A JSON array with an object per kernel: name, params ([name, type, elem,
   multiple_of, none]: type "ptr" or a scalar type, elem the pointee of a
   pointer, multiple_of the parameter's hint or null, none true for a pointer
   compiled as None, which takes an empty buffer), num_warps, constants,
   persistent, workspace (elements per program of each trailing workspace
   argument the caller does not pass) and then (the kernel run right after
   this one, e.g. split-K's combine kernel, or null). */
TESSEL_C_API TesselResult *tesselProgramKernels(TesselProgram *program);

typedef enum TesselArgKind {
  TesselArgBuffer = 0,
  TesselArgInt = 1,
  TesselArgFloat = 2,
} TesselArgKind;

typedef struct TesselArg {
  TesselArgKind kind;
  /* TesselArgBuffer: `count` elements of `elementSize` bytes at `data`,
     copied in before the run and back after it (also after a fault). The
     same `data` twice is one buffer. */
  void *data;
  size_t count;
  size_t elementSize;
  int64_t intValue;
  double floatValue;
} TesselArg;

/* Runs `kernel` over grid[0] x grid[1] x grid[2] programs with the kernel's
   user arguments (workspaces are allocated, zeroed, by the interpreter). */
TESSEL_C_API TesselResult *
tesselProgramRun(TesselProgram *program, const char *kernel,
                 const TesselArg *args, size_t numArgs, const int64_t grid[3]);

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_C_COMPILER_H */

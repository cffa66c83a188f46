//===- harness.cpp - Runs a host-compiled tessel kernel like a GPU --------===//
//
// Links with a kernel retargeted by emulate.py. One OS thread per GPU
// thread; a CTA's threads share a pthread barrier (bar.sync), each warp one
// for shuffles, and a shared-memory buffer that each thread reaches through
// its GS segment (the kernel's addrspace(256)). Grid kernels run one CTA at
// a time; persistent kernels run all CTAs at once, as their CTAs wait on
// each other.
//
//   harness SPEC
//
// SPEC: "warps gridX gridY gridZ persistent workspacePerCta sharedBytes",
// then one parameter per line: "ptr TYPE N INPUT OUTPUT" (float64 files),
// "KIND VALUE" for a scalar, or "tmap PARAM RANK ELEMBYTES SWIZZLE" and the
// dimensions, byte strides (of dimensions 1..) and box, innermost first, for
// a tensor map over the buffer of parameter PARAM.
//
// Bulk tensor copies run at issue, one element at a time, zero outside the
// array, swizzled as the copy engine does; transaction barriers (mbarrier)
// count arrivals and bytes under one lock, and waiters sleep on it.
//
//===----------------------------------------------------------------------===//

#include <asm/prctl.h>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

extern "C" void emu_entry(void **args);

namespace {

struct Cta {
  pthread_barrier_t barrier;
  pthread_barrier_t warpBarrier[32];
  uint32_t exchange[32][32];
  // mma.sync operand registers by warp and lane.
  uint32_t mmaA[32][32][4], mmaB[32][32][2];
  // ldmatrix row addresses (shared-memory offsets) by warp and lane.
  uint64_t rowAddress[32][32];
  std::vector<char> shared;
};

/// What the emulated copy engine reads from a tensor-map parameter.
struct TensorMap {
  char *base;
  int32_t rank, elemBytes, swizzle;
  int64_t dims[5], strides[5]; // innermost first; strides in bytes
  int32_t box[5];
};
static_assert(sizeof(TensorMap) <= 128, "a CUtensorMap has 128 bytes");

struct MBarrier {
  int phase = 0, pending = 0, count = 0;
  int64_t tx = 0;
};
std::mutex barrierLock;
std::condition_variable barrierDone;
std::map<std::pair<const void *, uint64_t>, MBarrier> barriers;

thread_local int tid;
thread_local int ctaid[3];
thread_local Cta *cta;
int nctaid[3];

[[noreturn]] void fail(const char *what) {
  fprintf(stderr, "harness: %s\n", what);
  exit(1);
}

size_t bytesOf(const std::string &type) {
  if (type == "f16" || type == "bf16")
    return 2;
  if (type == "f32" || type == "i32")
    return 4;
  if (type == "i64")
    return 8;
  if (type == "i1")
    return 1;
  fail("unknown element type");
}

// bf16 by hand (round to nearest even): the host has no conversion.
uint16_t toBF16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (u + 0x7fff + ((u >> 16) & 1)) >> 16;
}

float fromBF16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

void put(const std::string &type, char *p, double v) {
  if (type == "f16") {
    _Float16 h = (_Float16)v;
    memcpy(p, &h, 2);
  } else if (type == "bf16") {
    uint16_t h = toBF16(float(v));
    memcpy(p, &h, 2);
  } else if (type == "f32") {
    float f = float(v);
    memcpy(p, &f, 4);
  } else if (type == "i32") {
    // Rounded to nearest, as the interpreter stores integer inputs.
    int32_t i = int32_t(std::nearbyint(v));
    memcpy(p, &i, 4);
  } else if (type == "i64") {
    int64_t i = int64_t(std::nearbyint(v));
    memcpy(p, &i, 8);
  } else {
    *p = v != 0;
  }
}

double get(const std::string &type, const char *p) {
  if (type == "f16") {
    _Float16 h;
    memcpy(&h, p, 2);
    return double(h);
  }
  if (type == "bf16") {
    uint16_t h;
    memcpy(&h, p, 2);
    return fromBF16(h);
  }
  if (type == "f32") {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  if (type == "i32") {
    int32_t i;
    memcpy(&i, p, 4);
    return i;
  }
  if (type == "i64") {
    int64_t i;
    memcpy(&i, p, 8);
    return double(i);
  }
  return *p;
}

struct Buffer {
  std::string type, output;
  size_t n;
  std::vector<char> data;
};

struct Thread {
  Cta *cta;
  int tid, ctaid[3];
  void **args;
};

void *runThread(void *p) {
  Thread *t = static_cast<Thread *>(p);
  tid = t->tid;
  memcpy(ctaid, t->ctaid, sizeof ctaid);
  cta = t->cta;
  if (syscall(SYS_arch_prctl, ARCH_SET_GS, cta->shared.data()))
    fail("arch_prctl(ARCH_SET_GS) failed");
  emu_entry(t->args);
  return nullptr;
}

} // namespace

extern "C" {
// x86 code rounds bf16 vector elements (mma operand pairs) through this
// runtime routine, which libgcc before GCC 13 lacks: to nearest even, NaNs
// kept quiet. The bf16 result travels in the low half of xmm0; declared as
// returning float (bits above it zero) so that the compiler does not lower
// this very function to a call to itself.
float __truncsfbf2(float x) {
  uint32_t bits = x != x ? 0x7fc0u : toBF16(x);
  float result;
  memcpy(&result, &bits, 4);
  return result;
}
int emu_tid_x() { return tid; }
// %clock64: a monotonic clock stands for the multiprocessor's cycle counter.
long long emu_clock64() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
int emu_ctaid_x() { return ctaid[0]; }
int emu_ctaid_y() { return ctaid[1]; }
int emu_ctaid_z() { return ctaid[2]; }
int emu_nctaid_x() { return nctaid[0]; }
int emu_nctaid_y() { return nctaid[1]; }
int emu_nctaid_z() { return nctaid[2]; }
void emu_barrier(int) { pthread_barrier_wait(&cta->barrier); }
// Named barriers (bar.sync / bar.arrive id, count): a phase completes when
// `count` threads have arrived; bar.sync also waits for that.
struct NamedBarrier {
  int arrived = 0, phase = 0;
};
std::mutex namedLock;
std::condition_variable namedDone;
std::map<std::pair<const Cta *, int>, NamedBarrier> named;
static int arriveNamed(int id, int count) {
  NamedBarrier &b = named[{cta, id}];
  int phase = b.phase;
  if (++b.arrived == count) {
    b.arrived = 0;
    ++b.phase;
    namedDone.notify_all();
  }
  return phase;
}
void emu_named_barrier_arrive(int id, int count) {
  std::lock_guard<std::mutex> lock(namedLock);
  arriveNamed(id, count);
}
void emu_named_barrier_sync(int id, int count) {
  std::unique_lock<std::mutex> lock(namedLock);
  int phase = arriveNamed(id, count);
  namedDone.wait(lock, [&] { return named[{cta, id}].phase != phase; });
}
void emu_setmaxnreg_inc(int) {}
void emu_setmaxnreg_dec(int) {}
// cp.async copies at once (the asm stands in for it), so a group is always
// complete: commit and wait have nothing to do.
void emu_async_commit() {}
void emu_async_wait(int) {}
// shfl.sync.bfly: every lane of the warp calls it together.
int emu_shfl_bfly(int, int value, int laneMask, int) {
  int warp = tid / 32, lane = tid % 32;
  cta->exchange[warp][lane] = value;
  pthread_barrier_wait(&cta->warpBarrier[warp]);
  int result = cta->exchange[warp][lane ^ laneMask];
  pthread_barrier_wait(&cta->warpBarrier[warp]);
  return result;
}
// shfl.sync.idx: every lane of the warp calls it together.
int emu_shfl_idx(int, int value, int srcLane, int) {
  int warp = tid / 32, lane = tid % 32;
  cta->exchange[warp][lane] = value;
  pthread_barrier_wait(&cta->warpBarrier[warp]);
  int result = cta->exchange[warp][srcLane];
  pthread_barrier_wait(&cta->warpBarrier[warp]);
  return result;
}
// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.f32: every lane of the
// warp calls it together with its A (4) and B (2) registers of two 16-bit
// elements each (the low half first) and its 4 elements of C, replaced by D.
// Fragment layout from the PTX ISA, with group = lane / 4 and t = lane % 4:
// a0..a3 hold A[group + 8*(i%2)][2t + 8*(i/2) + {0,1}], b0/b1 hold
// B[2t + 8*i + {0,1}][group] and c0..c3 C[group + 8*(i/2)][2t + i%2].
void emu_mma(int bf16, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
             uint32_t b0, uint32_t b1, float *c) {
  int warp = tid / 32, lane = tid % 32;
  uint32_t *a = cta->mmaA[warp][lane], *b = cta->mmaB[warp][lane];
  a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3, b[0] = b0, b[1] = b1;
  pthread_barrier_wait(&cta->warpBarrier[warp]);
  auto element = [&](uint32_t reg, int e) -> float {
    uint16_t bits = reg >> (16 * e);
    if (bf16)
      return fromBF16(bits);
    _Float16 h;
    memcpy(&h, &bits, 2);
    return float(h);
  };
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    int group = l / 4, t = l % 4;
    for (int i = 0; i < 4; ++i)
      for (int e = 0; e < 2; ++e)
        A[group + 8 * (i % 2)][2 * t + 8 * (i / 2) + e] =
            element(cta->mmaA[warp][l][i], e);
    for (int i = 0; i < 2; ++i)
      for (int e = 0; e < 2; ++e)
        B[2 * t + 8 * i + e][group] = element(cta->mmaB[warp][l][i], e);
  }
  // Everyone has read the registers before any lane publishes its next.
  pthread_barrier_wait(&cta->warpBarrier[warp]);
  int group = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    int row = group + 8 * (i / 2), col = 2 * t + i % 2;
    for (int k = 0; k < 16; ++k)
      c[i] += A[row][k] * B[k][col];
  }
}
}

namespace {
// The 16-bit element at byte `offset` of shared memory, as a float.
float sharedElement(uint64_t offset, int bf16) {
  if (offset + 2 > cta->shared.size())
    fail("wgmma operand outside shared memory");
  uint16_t bits;
  memcpy(&bits, cta->shared.data() + offset, 2);
  if (bf16)
    return fromBF16(bits);
  _Float16 h;
  memcpy(&h, &bits, 2);
  return float(h);
}

// Where element (mn, k) (mn along M or N, k < 16) of a wgmma operand in
// shared memory lies, from its matrix descriptor: start address (bits
// 0-13), leading and stride byte offsets (LBO bits 16-29, SBO bits 32-45),
// all in 16-byte units, and the swizzle (bits 62-63: 1, 2, 3 for rows of
// 128, 64, 32 bytes). The PTX ISA's canonical swizzled layouts: K-major,
// rows of the swizzle's width along K, 8 rows an atom, atoms SBO apart
// along MN; MN-major, rows of that width along MN, 8 rows (of K) an atom,
// atoms SBO apart along K and LBO apart along MN. The swizzle then XORs the
// 16-byte chunk bits of the address (from bit 4) with those from bit 7.
uint64_t operandOffset(uint64_t desc, bool mnMajor, int mn, int k) {
  uint64_t start = (desc & 0x3fff) << 4, lbo = (desc >> 16 & 0x3fff) << 4,
           sbo = (desc >> 32 & 0x3fff) << 4;
  int mode = int(desc >> 62);
  if (mode == 0)
    fail("wgmma operand without a swizzle");
  int width = 256 >> mode, chunkBits = 4 - mode;
  uint64_t at = mnMajor ? start + mn / (width / 2) * lbo + k / 8 * sbo +
                              k % 8 * width + 2 * (mn % (width / 2))
                        : start + mn / 8 * sbo + mn % 8 * width + 2 * k;
  return at ^ (at >> 7 & ((1u << chunkBits) - 1)) << 4;
}
} // namespace

extern "C" {
// wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}: every
// thread of the warpgroup calls it together with its N / 2 accumulators
// `d`, replaced by the result at once (the asynchrony is not emulated).
// Warp w of the warpgroup computes rows 16 (w % 4) to
// 16 (w % 4) + 15 of the 64: d[4j + 2r + e] is row group + 8r, column
// 8j + 2t + e (group = lane / 4, t = lane % 4). A comes from shared memory
// through `descA` (K-major unless `transA`) or from the 4 registers `regsA`
// in mma.sync's A fragment layout; B (K x N) through `descB`, N-major with
// `transB`.
void emu_wgmma(int n, int bf16, int sharedA, int transA, uint64_t descA,
               const uint32_t *regsA, int transB, uint64_t descB, int scaleD,
               float *d) {
  int warp = tid / 32, lane = tid % 32, rows = 16 * (warp % 4);
  float A[16][16];
  if (sharedA) {
    for (int r = 0; r < 16; ++r)
      for (int k = 0; k < 16; ++k)
        A[r][k] =
            sharedElement(operandOffset(descA, transA, rows + r, k), bf16);
  } else {
    memcpy(cta->mmaA[warp][lane], regsA, 4 * sizeof(uint32_t));
    pthread_barrier_wait(&cta->warpBarrier[warp]);
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < 4; ++i)
        for (int e = 0; e < 2; ++e) {
          uint16_t bits = cta->mmaA[warp][l][i] >> (16 * e);
          float v;
          if (bf16) {
            v = fromBF16(bits);
          } else {
            _Float16 h;
            memcpy(&h, &bits, 2);
            v = float(h);
          }
          A[l / 4 + 8 * (i % 2)][2 * (l % 4) + 8 * (i / 2) + e] = v;
        }
    pthread_barrier_wait(&cta->warpBarrier[warp]);
  }
  int group = lane / 4, t = lane % 4;
  for (int j = 0; j < n / 8; ++j)
    for (int r = 0; r < 2; ++r)
      for (int e = 0; e < 2; ++e) {
        int row = group + 8 * r, col = 8 * j + 2 * t + e;
        float sum = scaleD ? d[4 * j + 2 * r + e] : 0.0f;
        for (int k = 0; k < 16; ++k)
          sum += A[row][k] *
                 sharedElement(operandOffset(descB, transB, col, k), bf16);
        d[4 * j + 2 * r + e] = sum;
      }
}
void emu_wgmma_commit() {}
// ex2.approx.ftz.f32: results below the smallest normal float flush to 0.
float emu_ex2_ftz(float x) {
  float r = exp2f(x);
  return r < FLT_MIN ? 0.0f : r;
}
void emu_fence_proxy_async() {}
void emu_fence_mbarrier_init() {}

static MBarrier &barrierAt(uint64_t offset) { return barriers[{cta, offset}]; }
// The phase completes once its arrivals and bytes are all in.
static void completeIfDone(MBarrier &b) {
  if (b.pending || b.tx)
    return;
  b.phase ^= 1;
  b.pending = b.count;
  barrierDone.notify_all();
}
void emu_mbarrier_init(uint64_t offset, int count) {
  std::lock_guard<std::mutex> lock(barrierLock);
  MBarrier &b = barrierAt(offset);
  b = MBarrier{0, count, count, 0};
}
void emu_mbarrier_arrive_expect_tx(uint64_t offset, int bytes) {
  std::lock_guard<std::mutex> lock(barrierLock);
  MBarrier &b = barrierAt(offset);
  if (b.count == 0)
    fail("mbarrier.arrive.expect_tx on a barrier never initialised");
  b.tx += bytes;
  --b.pending;
  completeIfDone(b);
}
void emu_mbarrier_arrive(uint64_t offset) {
  std::lock_guard<std::mutex> lock(barrierLock);
  MBarrier &b = barrierAt(offset);
  if (b.count == 0)
    fail("mbarrier.arrive on a barrier never initialised");
  --b.pending;
  completeIfDone(b);
}
// try_wait.parity P returns once the phase of parity P has completed.
void emu_mbarrier_wait(uint64_t offset, int parity) {
  std::unique_lock<std::mutex> lock(barrierLock);
  barrierDone.wait(lock, [&] { return barrierAt(offset).phase != parity; });
}
void emu_tma_load(uint64_t dst, uint64_t barrier, const TensorMap *map, int c0,
                  int c1, int c2, int c3, int c4) {
  int coords[5] = {c0, c1, c2, c3, c4};
  int64_t count = 1;
  for (int d = 0; d < map->rank; ++d)
    count *= map->box[d];
  int e = map->elemBytes;
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, src = 0;
    bool inside = true;
    for (int d = 0; d < map->rank; ++d) {
      int64_t x = coords[d] + rest % map->box[d];
      rest /= map->box[d];
      inside &= x >= 0 && x < map->dims[d];
      src += x * (d ? map->strides[d] : e);
    }
    // 16-byte chunks XOR the row's index within the swizzle's period
    // (address bits 4.. by bits 7..).
    uint64_t at = dst + i * e;
    if (map->swizzle)
      at ^= ((at >> 7) & (map->swizzle / 16 - 1)) << 4;
    char *out = cta->shared.data() + at;
    if (inside)
      memcpy(out, map->base + src, e);
    else
      memset(out, 0, e);
  }
  std::lock_guard<std::mutex> lock(barrierLock);
  MBarrier &b = barrierAt(barrier);
  b.tx -= count * e;
  completeIfDone(b);
}
}

extern "C" {
// ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].b16: every lane of the warp
// calls it together with the shared-memory offset of one row (lanes 8i to
// 8i + 7 give the rows of matrix i) and receives one 32-bit register per
// matrix: row lane / 4, columns 2(lane % 4) and 2(lane % 4) + 1 (the low
// half first); with .trans, those of the transposed matrix.
void emu_ldmatrix(int num, int trans, uint64_t offset, uint32_t *out) {
  int warp = tid / 32, lane = tid % 32;
  cta->rowAddress[warp][lane] = offset;
  pthread_barrier_wait(&cta->warpBarrier[warp]);
  auto element = [&](int matrix, int row, int col) {
    uint64_t at = cta->rowAddress[warp][8 * matrix + row] + 2 * col;
    if (at + 2 > cta->shared.size())
      fail("ldmatrix outside shared memory");
    uint16_t bits;
    memcpy(&bits, cta->shared.data() + at, 2);
    return uint32_t(bits);
  };
  int row = lane / 4, col = 2 * (lane % 4);
  for (int i = 0; i < num; ++i)
    out[i] = trans ? element(i, col, row) | element(i, col + 1, row) << 16
                   : element(i, row, col) | element(i, row, col + 1) << 16;
  pthread_barrier_wait(&cta->warpBarrier[warp]);
}
}

int main(int argc, char **argv) {
  if (argc != 2)
    fail("usage: harness SPEC");
  FILE *f = fopen(argv[1], "r");
  int warps, grid[3], persistent;
  long workspacePerCta, sharedBytes;
  if (!f || fscanf(f, "%d %d %d %d %d %ld %ld", &warps, &grid[0], &grid[1],
                   &grid[2], &persistent, &workspacePerCta, &sharedBytes) != 7)
    fail("bad spec");
  std::vector<Buffer> buffers;
  std::vector<uint64_t> values; // one 8-byte slot per kernel parameter
  std::vector<int> bufferOf;    // its buffer, or -1 for a scalar
  std::vector<std::unique_ptr<TensorMap>> maps;
  std::vector<std::pair<size_t, int>> mapOf; // (argument, its array's)
  char kind[16];
  while (fscanf(f, "%15s", kind) == 1) {
    if (!strcmp(kind, "tmap")) {
      auto map = std::make_unique<TensorMap>();
      int param;
      if (fscanf(f, "%d %d %d %d", &param, &map->rank, &map->elemBytes,
                 &map->swizzle) != 4)
        fail("bad tensor map");
      for (int d = 0; d < map->rank; ++d)
        if (fscanf(f, "%ld", &map->dims[d]) != 1)
          fail("bad tensor map size");
      for (int d = 1; d < map->rank; ++d)
        if (fscanf(f, "%ld", &map->strides[d]) != 1)
          fail("bad tensor map stride");
      for (int d = 0; d < map->rank; ++d)
        if (fscanf(f, "%d", &map->box[d]) != 1)
          fail("bad tensor map box");
      mapOf.emplace_back(values.size(), param);
      maps.push_back(std::move(map));
      values.push_back(0);
      bufferOf.push_back(-1);
      continue;
    }
    if (strcmp(kind, "ptr")) {
      double v;
      if (fscanf(f, "%lf", &v) != 1)
        fail("bad scalar");
      uint64_t bits = 0;
      put(kind, reinterpret_cast<char *>(&bits), v);
      values.push_back(bits);
      bufferOf.push_back(-1);
      continue;
    }
    char type[16], input[512], output[512];
    size_t n;
    if (fscanf(f, "%15s %zu %511s %511s", type, &n, input, output) != 4)
      fail("bad buffer");
    Buffer b{type, output, n, std::vector<char>(n * bytesOf(type))};
    std::vector<double> in(n);
    FILE *fi = fopen(input, "rb");
    if (!fi || fread(in.data(), 8, n, fi) != n)
      fail("cannot read an input");
    fclose(fi);
    for (size_t i = 0; i < n; ++i)
      put(b.type, b.data.data() + i * bytesOf(b.type), in[i]);
    buffers.push_back(std::move(b));
    values.push_back(0);
    bufferOf.push_back(buffers.size() - 1);
  }
  for (size_t i = 0; i < values.size(); ++i)
    if (bufferOf[i] >= 0)
      values[i] = reinterpret_cast<uint64_t>(buffers[bufferOf[i]].data.data());
  // A tensor map is passed by value: the kernel's argument points at it.
  for (size_t m = 0; m < maps.size(); ++m) {
    auto [slot, param] = mapOf[m];
    maps[m]->base = reinterpret_cast<char *>(values[param]);
    values[slot] = reinterpret_cast<uint64_t>(maps[m].get());
  }
  int ctas = grid[0] * grid[1] * grid[2];
  // The runtime's workspace: zeroed, passed last.
  std::vector<char> workspace(workspacePerCta * ctas, 0);
  if (persistent && workspacePerCta)
    values.push_back(reinterpret_cast<uint64_t>(workspace.data()));
  std::vector<void *> args;
  for (uint64_t &v : values)
    args.push_back(&v);

  memcpy(nctaid, grid, sizeof nctaid);
  int threads = 32 * warps;
  int batch = persistent ? ctas : 1;
  for (int first = 0; first < ctas; first += batch) {
    std::vector<Cta> group(batch);
    std::vector<Thread> state(batch * threads);
    std::vector<pthread_t> handles(batch * threads);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    for (int c = 0; c < batch; ++c) {
      pthread_barrier_init(&group[c].barrier, nullptr, threads);
      for (int w = 0; w < warps; ++w)
        pthread_barrier_init(&group[c].warpBarrier[w], nullptr, 32);
      // Garbage, so that reading before writing shows.
      group[c].shared.assign(sharedBytes, char(0xAB));
      int id = first + c;
      int where[3] = {id % grid[0], id / grid[0] % grid[1],
                      id / (grid[0] * grid[1])};
      for (int t = 0; t < threads; ++t) {
        Thread &s = state[c * threads + t];
        s = {&group[c], t, {where[0], where[1], where[2]}, args.data()};
        if (pthread_create(&handles[c * threads + t], &attr, runThread, &s))
          fail("pthread_create failed");
      }
    }
    for (pthread_t &h : handles)
      pthread_join(h, nullptr);
  }

  for (Buffer &b : buffers) {
    std::vector<double> out(b.n);
    for (size_t i = 0; i < b.n; ++i)
      out[i] = get(b.type, b.data.data() + i * bytesOf(b.type));
    FILE *fo = fopen(b.output.c_str(), "wb");
    if (!fo || fwrite(out.data(), 8, b.n, fo) != b.n)
      fail("cannot write an output");
    fclose(fo);
  }
  return 0;
}

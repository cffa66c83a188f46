//===- SharedBanks.cpp - What a warp's shared-memory accesses cost --------===//

#include "Conversion/TesselToLLVM/SharedBanks.h"

#include "llvm/ADT/STLExtras.h"
#include <numeric>

using namespace mlir;
using namespace mlir::tessel;

static constexpr unsigned kWarpSize = 32, kBanks = 32;

/// Coordinate step of `lane` (warp 0) along a dimension.
static int64_t laneBase(const DimLayout &d, unsigned lane) {
  return int64_t(lane / d.laneStride % d.lanes) * d.laneStep();
}

/// Wavefronts of one warp-wide access of `bytes` bytes per lane, the first
/// at byte `addrs[lane]`: 8-byte accesses are served a half-warp at a time,
/// 16-byte ones a quarter, each phase taking as many wavefronts as the most
/// distinct 4-byte words any one bank holds.
static int64_t wavefronts(ArrayRef<int64_t> addrs, int64_t bytes) {
  int64_t lanesPerPhase = kWarpSize / std::max<int64_t>(1, bytes / 4);
  int64_t total = 0;
  // Called for every candidate pitch of every staged tile: no allocation.
  SmallVector<int64_t, 4 * kWarpSize> words;
  for (unsigned first = 0; first < kWarpSize; first += lanesPerPhase) {
    words.clear();
    for (unsigned lane = first; lane < first + lanesPerPhase; ++lane)
      for (int64_t w = addrs[lane] / 4, e = (addrs[lane] + bytes - 1) / 4;
           w <= e; ++w)
        words.push_back(w);
    llvm::sort(words);
    unsigned perBank[kBanks] = {}, most = 1;
    for (int64_t w : llvm::make_range(words.begin(), llvm::unique(words)))
      most = std::max(most, ++perBank[w % kBanks]);
    total += most;
  }
  return total;
}

FailureOr<SharedAccess>
mlir::tessel::sharedAccessOf(TileType tile, ArrayRef<int64_t> offsets) {
  FailureOr<TileLayout> layout = TileLayout::get(tile);
  if (failed(layout) || layout->getRank() != 2)
    return failure();
  SharedAccess access{*layout};
  if (offsets.size() == 2) {
    access.row = ShapedType::isDynamic(offsets[0]) ? 0 : offsets[0];
    access.col = ShapedType::isDynamic(offsets[1]) ? 0 : offsets[1];
  }
  return access;
}

int64_t mlir::tessel::sharedAccessCost(ArrayRef<SharedAccess> accesses,
                                       int64_t pitch, int64_t elemBytes) {
  // Accesses of one distribution at one row, by their first.
  SmallVector<SmallVector<const SharedAccess *>> groups;
  for (const SharedAccess &a : accesses) {
    auto *same = llvm::find_if(groups, [&](auto &g) {
      return g.front()->row == a.row &&
             g.front()->layout.sameDistribution(a.layout);
    });
    if (same == groups.end())
      groups.push_back({&a});
    else
      same->push_back(&a);
  }

  int64_t cost = 0;
  for (ArrayRef<const SharedAccess *> group : groups) {
    const DimLayout &rows = group.front()->layout.getDim(0);
    const DimLayout &cols = group.front()->layout.getDim(1);
    // The columns each thread reads beyond its own base, over the group.
    SmallVector<int64_t> offsets;
    for (const SharedAccess *a : group)
      for (int64_t j = 0, e = cols.numLocal(); j < e; ++j)
        offsets.push_back(a->col + cols.offset(j));
    llvm::sort(offsets);
    offsets.erase(llvm::unique(offsets), offsets.end());
    // What the address provably is a multiple of, in elements (at most 16
    // bytes).
    int64_t align = 16 / elemBytes;
    if (rows.lanes > 1 || rows.warps > 1)
      align = std::gcd(align, pitch);
    if (cols.lanes > 1)
      align = std::gcd(align, cols.laneStep());
    for (int64_t i = 0, e = rows.numLocal(); i < e; ++i) {
      int64_t rowOffset = group.front()->row + rows.offset(i);
      for (auto it = offsets.begin(); it != offsets.end();) {
        int64_t x = *it, width = align;
        while (width > 1 &&
               (x % width != 0 ||
                !llvm::all_of(llvm::seq<int64_t>(1, width), [&](int64_t k) {
                  return llvm::binary_search(offsets, x + k);
                })))
          width /= 2;
        SmallVector<int64_t, kWarpSize> addrs;
        for (unsigned lane = 0; lane < kWarpSize; ++lane)
          addrs.push_back(((laneBase(rows, lane) + rowOffset) * pitch +
                           laneBase(cols, lane) + x) *
                          elemBytes);
        cost += wavefronts(addrs, width * elemBytes) + 1;
        std::advance(it, width);
      }
    }
  }
  return cost;
}

int64_t mlir::tessel::cheapestPitch(ArrayRef<SharedAccess> writes,
                                    ArrayRef<SharedAccess> reads,
                                    int64_t rowElems, int64_t natural,
                                    int64_t elemBytes, int64_t step) {
  auto cost = [&](int64_t pitch) {
    return sharedAccessCost(writes, pitch, elemBytes) +
           sharedAccessCost(reads, pitch, elemBytes);
  };
  int64_t best = natural, bestCost = cost(natural);
  for (int64_t pitch = llvm::alignTo(rowElems, step),
               last = natural + 128 / elemBytes;
       pitch <= last; pitch += step)
    if (int64_t c = cost(pitch); c < bestCost)
      best = pitch, bestCost = c;
  return best;
}

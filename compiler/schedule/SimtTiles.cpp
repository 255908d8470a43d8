//===- compiler/schedule/SimtTiles.cpp - f32 tiles by waves ---------------===//
#include "compiler/schedule/SimtTiles.h"

#include "compiler/schedule/Schedule.h"
#include "compiler/simplify/MatmulRewrites.h"

#include <algorithm>

namespace minijit {

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t tileCount(const SimtTileShape &t, int64_t m, int64_t n) {
  return ceilDiv(m, t.bm) * ceilDiv(n, t.bn);
}

/// Per float an operand tile's k-step copies into shared memory, in
/// multiply-adds (see simtPaddedWork).
constexpr double kCopyWeight = 4.0;

/// A product of many tiles leaves the 128x128 tile, the one tuned most,
/// only for a tile that pads a tenth less or more.
constexpr double kNarrowSaving = 0.9;

/// Whether the waves rules may give m x n tile `t`: a narrow tile (256x32,
/// 32x256) only where its narrow side holds all of n (m); across several
/// of its tiles the square ones reuse more.
bool mayTake(const SimtTileShape &t, int64_t m, int64_t n) {
  if (t.bm >= 8 * t.bn)
    return n <= t.bn;
  if (t.bn >= 8 * t.bm)
    return m <= t.bm;
  return true;
}

} // namespace

unsigned SimtTileShape::minBlocksPerSM() const {
  if (tm == 8 && tn == 8)
    return std::max(2u, 512 / threads());
  return threads() * tm * tn <= 16384 ? 2 : 1;
}

const std::vector<SimtTileShape> &simtNamedTiles() {
  static const std::vector<SimtTileShape> tiles = {{256, 128, 8, 8, 16},
                                                   {128, 128, 8, 8, 8},
                                                   {64, 64, 16, 4, 4},
                                                   {32, 32, 32, 2, 2},
                                                   {16, 16, 64, 1, 1}};
  return tiles;
}

const std::vector<SimtTileShape> &simtWaveTiles() {
  static const std::vector<SimtTileShape> tiles = {
      {128, 128, 8, 8, 8}, {128, 64, 8, 8, 8}, {64, 128, 8, 8, 8}, {64, 64, 8, 8, 8},
      {256, 32, 8, 8, 8},  {32, 256, 8, 8, 8}, {32, 32, 32, 2, 2}, {16, 16, 64, 1, 1}};
  return tiles;
}

int simtBlocksPerSM(const SimtTileShape &t, const DeviceProperties &dev) {
  MatmulSimtSchedule s;
  s.bm = t.bm;
  s.bn = t.bn;
  s.bk = t.bk;
  s.tm = t.tm;
  s.tn = t.tn;
  s.block = t.threads();
  s.minBlocksPerSM = t.minBlocksPerSM();
  return std::max(1, blocksPerSM(Schedule{s}, dev, 0));
}

double simtPaddedWork(const SimtTileShape &t, int64_t m, int64_t n) {
  double reads = 1.0 + double(t.tm + t.tn) / double(t.tm * t.tn);
  return double(tileCount(t, m, n)) *
         (double(t.bm) * t.bn * reads + kCopyWeight * (t.bm + t.bn));
}

double simtProductCost(const SimtTileShape &t, int64_t m, int64_t n, int64_t batch, int64_t k,
                       const DeviceProperties &dev) {
  int64_t slots = int64_t(simtBlocksPerSM(t, dev)) * dev.smCount;
  int64_t waves = ceilDiv(tileCount(t, m, n) * batch, slots);
  // in multiply-adds at the 128x128 tile's rate (the unit the partial
  // sums' traffic of splitSlices is weighed in)
  const SimtTileShape &t128 = simtWaveTiles().front();
  double rate = double(t128.bm) * t128.bn / simtPaddedWork(t128, t128.bm, t128.bn);
  return double(waves) * double(slots) * simtPaddedWork(t, 1, 1) * rate * double(k);
}

std::optional<SimtTileShape> simtWaveTile(int64_t m, int64_t n, int64_t batch,
                                          const DeviceProperties &dev) {
  const SimtTileShape &t128 = simtWaveTiles().front();
  int64_t tiles = tileCount(t128, m, n);
  if (tiles * batch < dev.smCount || tiles >= 2 * int64_t(dev.smCount))
    return std::nullopt;
  const SimtTileShape *best = &t128;
  for (const SimtTileShape &w : simtWaveTiles())
    if (mayTake(w, m, n) && tileCount(w, m, n) * batch >= dev.smCount &&
        simtPaddedWork(w, m, n) < simtPaddedWork(*best, m, n))
      best = &w;
  return *best;
}

std::optional<SimtTileShape> simtNarrowTile(int64_t m, int64_t n, int64_t batch,
                                            const DeviceProperties &dev) {
  const SimtTileShape &t128 = simtWaveTiles().front();
  if (tileCount(t128, m, n) * batch < 2 * int64_t(dev.smCount))
    return std::nullopt;
  auto cost = [&](const SimtTileShape &t) { return simtProductCost(t, m, n, batch, 1, dev); };
  const SimtTileShape *best = &t128;
  for (const SimtTileShape &w : simtWaveTiles())
    if (w.tm == 8 && w.tn == 8 && mayTake(w, m, n) && cost(w) < cost(*best))
      best = &w;
  if (cost(*best) > kNarrowSaving * cost(t128))
    return std::nullopt;
  return *best;
}

SimtTileShape pickSimtTile(int64_t m, int64_t n, int64_t batch, const DeviceProperties &dev) {
  if (std::optional<SimtTileShape> w = simtWaveTile(m, n, batch, dev))
    return *w;
  if (std::optional<SimtTileShape> w = simtNarrowTile(m, n, batch, dev))
    return *w;
  const std::vector<SimtTileShape> &named = simtNamedTiles();
  for (const SimtTileShape &t : named) {
    // 256x128 by hand or by the tuner only: one block an SM of 8x16
    // outputs a thread was slower than the 128x128 tile on the large
    // products measured (docs/PERFORMANCE.md)
    if (t.bm != 256 && tileCount(t, m, n) * batch >= dev.smCount)
      return t;
  }
  return named.back();
}

int64_t splitSlices(int64_t m, int64_t n, int64_t k, const DeviceProperties &dev,
                    int64_t padCopies) {
  int64_t tiles128 = ((m + 127) / 128) * ((n + 127) / 128);
  // (a k under 512 makes a short kernel already, which the split's second
  // kernel, the sum, would lengthen as much as the slices shorten it)
  if (tiles128 >= 2 * int64_t(dev.smCount) || k < 512)
    return 1;
  // Bytes of memory traffic in multiply-adds of the machine: about 45
  // TFLOP/s against 3 TB/s, 7.5 multiply-adds a byte.
  const double perByte = 7.5;
  const SimtTileShape &t128 = simtWaveTiles().front();
  auto cost = [&](int64_t s) {
    int64_t depth = s == 1 ? k : sliceDepth(k, s);
    // a batch too small for the 128x128 tile to fill the SMs (the named
    // tiles' rule then) is counted on that tile
    SimtTileShape t = simtWaveTile(m, n, s, dev).value_or(t128);
    double time = simtProductCost(t, m, n, s, depth, dev);
    if (s == 1)
      return time;
    // the partial sums, written and read (8 bytes an output and slice)
    time += perByte * 8.0 * double(s) * double(m) * double(n);
    // slices that do not end where k does need the operands copied with
    // zeros (read and written once)
    if (s * depth != k)
      time += perByte * 8.0 * double(padCopies);
    return time;
  };
  // Up to the count whose tiles fill the blocks an SM holds of the tile
  // that has most of them (a product of few tiles over a long k takes many
  // slices), and at least 16.
  int64_t most = 16;
  for (const SimtTileShape &t : simtWaveTiles()) {
    int64_t tiles = ((m + t.bm - 1) / t.bm) * ((n + t.bn - 1) / t.bn);
    most = std::max<int64_t>(most, int64_t(simtBlocksPerSM(t, dev)) * dev.smCount / tiles);
  }
  int64_t best = 1;
  double least = cost(1);
  for (int64_t s = 2; s <= most && sliceDepth(k, s) >= kMinSliceDepth; ++s)
    if (double c = cost(s); c < least) {
      least = c;
      best = s;
    }
  return least <= 0.8 * cost(1) ? best : 1;
}

bool splitInKernelFills(int64_t m, int64_t n, int64_t k, int64_t batch,
                        const DeviceProperties &dev) {
  if (m < 32 || k < 128)
    return false;
  int64_t tiles = ceilDiv(m, 128) * ceilDiv(n, 128) * batch;
  return tiles * 10 >= int64_t(dev.smCount) * 9;
}

int64_t splitInKernelSlices(int64_t m, int64_t n, int64_t k, int64_t padCopies,
                            const DeviceProperties &dev) {
  if (m < 32 || k < 128)
    return 0;
  int64_t tiles = ceilDiv(m, 128) * ceilDiv(n, 128);
  // In k-steps of one round of tiles: a tile's depth plus what it does
  // once (fills the TMA ring, stores its outputs), and the partial sums'
  // 8 bytes an output and slice (a round takes about 57 ns a k on the
  // H100, in which 3 TB/s move about 170 KB).
  const double fill = 256.0, bytesPerStep = 170e3;
  auto cost = [&](int64_t s) {
    int64_t depth = s == 1 ? k : sliceDepth(k, s);
    double time = double(ceilDiv(tiles * s, dev.smCount)) * double(depth + fill);
    if (s > 1)
      time += 8.0 * double(s) * double(m) * double(n) / bytesPerStep;
    // (slices that do not end where k does: the operands copied with zeros)
    if (s > 1 && s * depth != k)
      time += 8.0 * double(padCopies) / bytesPerStep;
    return time;
  };
  // Of the counts whose tiles fill 90 % of a wave or more (up to two waves'
  // worth, or 16), the cheapest; a count of more slices only where it
  // saves a tenth or more.
  int64_t most = std::max<int64_t>(16, 2 * ceilDiv(dev.smCount, tiles)), best = 0;
  double least = 0;
  for (int64_t s = 1; s <= most && (s == 1 || sliceDepth(k, s) >= kMinSliceDepth); ++s)
    if (double c = cost(s); splitInKernelFills(m, n, k, s, dev) && (!best || c < 0.9 * least)) {
      least = c;
      best = s;
    }
  return best;
}

} // namespace minijit

//===- ir/HostTensor.cpp - tensors in host memory -------------------------===//
#include "ir/HostTensor.h"

#include "ir/Error.h"
#include "ir/Npy.h"
#include "ir/Printer.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <limits>
#include <new>

#include <sys/resource.h>
#include <unistd.h>

namespace minijit {

namespace {

/// A tensor's shape is numbers: a named dimension gives its bound size.
Shape sizesOf(const Shape &shape) {
  if (!shape.isBound())
    throw GraphError("a tensor of shape " + shape.str() +
                     " needs a size for each named dimension; bind them first");
  return Shape(std::span<const int64_t>(shape.dims()));
}

/// The bytes of a tensor of `shape`, after checking they fit the host.
size_t checkedBytes(DType dtype, const Shape &shape) {
  int64_t bytes = static_cast<int64_t>(dtypeSize(dtype));
  bool overflow = false;
  for (int64_t d : shape.dims())
    overflow |= __builtin_mul_overflow(bytes, d, &bytes);
  if (int64_t limit = maxHostTensorBytes(); overflow || bytes > limit)
    throw ResourceError(llvm::formatv("a host tensor {0} needs {1} bytes, more than the {2} this "
                                      "host can give one tensor (its memory, or ulimit -v)",
                                      typeText(dtype, shape), bytes, limit)
                            .str());
  return static_cast<size_t>(bytes);
}

/// `bytes` zero bytes, or a ResourceError when the allocation fails.
std::vector<uint8_t> allocate(size_t bytes, DType dtype, const Shape &shape) try {
  return std::vector<uint8_t>(bytes);
} catch (const std::bad_alloc &) {
  throw ResourceError(llvm::formatv("cannot allocate {0} bytes for a host tensor {1}: out of "
                                    "memory",
                                    bytes, typeText(dtype, shape))
                          .str());
}

} // namespace

int64_t maxHostTensorBytes() {
  int64_t limit = std::numeric_limits<int64_t>::max();
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && pageSize > 0)
    limit = static_cast<int64_t>(pages) * pageSize;
  struct rlimit as;
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    limit = std::min<int64_t>(limit, static_cast<int64_t>(as.rlim_cur));
  return limit;
}

HostTensor::HostTensor(DType dtype, const Shape &shape)
    : Type(dtype), Dims(sizesOf(shape)), Data(allocate(checkedBytes(dtype, Dims), dtype, Dims)) {
  Count = Dims.numel();
}

HostTensor HostTensor::fromData(DType dtype, const Shape &shape, const void *data, size_t bytes) {
  Shape sizes = sizesOf(shape);
  auto want = static_cast<size_t>(sizes.numel()) * dtypeSize(dtype);
  if (bytes != want)
    throw GraphError(llvm::formatv("a host tensor {0} holds {1} bytes, got {2}",
                                   typeText(dtype, sizes), want, bytes)
                         .str());
  HostTensor t(dtype, sizes);
  if (bytes)
    std::memcpy(t.data(), data, bytes);
  return t;
}

HostTensor HostTensor::fromData(const Shape &shape, std::span<const float> values) {
  return fromData(DType::F32, shape, values.data(), values.size_bytes());
}

HostTensor HostTensor::fromData(const Shape &shape, std::span<const int32_t> values) {
  return fromData(DType::I32, shape, values.data(), values.size_bytes());
}

HostTensor HostTensor::fromData(const Shape &shape, std::span<const int64_t> values) {
  return fromData(DType::I64, shape, values.data(), values.size_bytes());
}

HostTensor HostTensor::fromNpy(std::string_view path) { return readNpy(path, "tensor"); }

void HostTensor::outOfRange(int64_t i) const {
  throw GraphError(llvm::formatv("element {0} of a host tensor {1}: the index must be in [0, {2})",
                                 i, typeText(Type, Dims), Count)
                       .str());
}

double HostTensor::get(int64_t i) const {
  if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(Count))
    outOfRange(i);
  const uint8_t *p = Data.data();
  switch (Type) {
  case DType::F32: {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  case DType::F16: {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return halfBitsToFloat(h);
  }
  case DType::BF16: {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return bfloat16BitsToFloat(h);
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  case DType::Bool: return p[i] != 0;
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p + 8 * i, 8);
    return static_cast<double>(v);
  }
  }
  llvm_unreachable("bad dtype");
}

int64_t HostTensor::getI64(int64_t i) const {
  if (Type != DType::I64)
    return toInt64(get(i));
  if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(Count))
    outOfRange(i);
  int64_t v;
  std::memcpy(&v, Data.data() + 8 * i, 8);
  return v;
}

void HostTensor::setI64(int64_t i, int64_t v) {
  if (Type != DType::I64) {
    // int64 to float rounds once (as cvt.rn.f32.s64), not through a double
    set(i, isFloat(Type) ? static_cast<double>(static_cast<float>(v)) : static_cast<double>(v));
    return;
  }
  if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(Count))
    outOfRange(i);
  std::memcpy(Data.data() + 8 * i, &v, 8);
}

void HostTensor::copyElement(int64_t i, const HostTensor &from, int64_t j) {
  if (from.Type != Type) {
    set(i, from.get(j));
    return;
  }
  if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(Count))
    outOfRange(i);
  if (static_cast<uint64_t>(j) >= static_cast<uint64_t>(from.Count))
    from.outOfRange(j);
  unsigned size = dtypeSize(Type);
  std::memcpy(Data.data() + size * i, from.Data.data() + size * j, size);
}

void HostTensor::set(int64_t i, double v) {
  if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(Count))
    outOfRange(i);
  uint8_t *p = Data.data();
  switch (Type) {
  case DType::F32: {
    float f = static_cast<float>(v);
    std::memcpy(p + 4 * i, &f, 4);
    return;
  }
  case DType::F16: {
    uint16_t h = floatToHalfBits(static_cast<float>(v));
    std::memcpy(p + 2 * i, &h, 2);
    return;
  }
  case DType::BF16: {
    uint16_t h = floatToBFloat16Bits(static_cast<float>(v));
    std::memcpy(p + 2 * i, &h, 2);
    return;
  }
  case DType::I32: {
    auto x = static_cast<int32_t>(roundToDType(v, DType::I32));
    std::memcpy(p + 4 * i, &x, 4);
    return;
  }
  case DType::Bool: p[i] = roundToDType(v, DType::Bool) != 0; return;
  case DType::I64: {
    int64_t x = toInt64(v);
    std::memcpy(p + 8 * i, &x, 8);
    return;
  }
  }
  llvm_unreachable("bad dtype");
}

namespace {
/// splitmix64: small, fast and the same on every platform.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return (next() >> 11) * 0x1.0p-53; } // [0, 1)
};
} // namespace

HostTensor HostTensor::random(DType dtype, const Shape &shape, uint64_t seed) {
  HostTensor t(dtype, shape);
  SplitMix64 rng{seed * 0x2545F4914F6CDD1Dull + 0x1234567ull};
  int64_t n = t.numel();
  switch (dtype) {
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    for (int64_t i = 0; i < n; i += 2) {
      // Box-Muller: two normals from two uniforms.
      double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
      double r = std::sqrt(-2.0 * std::log(u1));
      t.set(i, r * std::cos(2 * M_PI * u2));
      if (i + 1 < n)
        t.set(i + 1, r * std::sin(2 * M_PI * u2));
    }
    break;
  case DType::I32:
  case DType::I64:
    for (int64_t i = 0; i < n; ++i)
      t.set(i, static_cast<double>(static_cast<int64_t>(rng.next() % 33) - 16));
    break;
  case DType::Bool:
    for (int64_t i = 0; i < n; ++i)
      t.set(i, static_cast<double>(rng.next() >> 63));
    break;
  }
  return t;
}

namespace {
constexpr uint32_t kPoison32 = 0x7FC0DEADu;
constexpr uint64_t kPoison64 = 0x7FC0DEAD7FC0DEADull;
constexpr uint16_t kPoisonF16 = 0x7E5Au;
constexpr uint16_t kPoisonBF16 = 0x7FDAu;
constexpr uint8_t kPoisonBool = 0xABu;
} // namespace

void HostTensor::poison() {
  int64_t n = numel();
  uint8_t *p = Data.data();
  switch (Type) {
  case DType::F32:
  case DType::I32:
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(p + 4 * i, &kPoison32, 4);
    return;
  case DType::F16:
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(p + 2 * i, &kPoisonF16, 2);
    return;
  case DType::BF16:
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(p + 2 * i, &kPoisonBF16, 2);
    return;
  case DType::Bool: std::memset(p, kPoisonBool, n); return;
  case DType::I64:
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(p + 8 * i, &kPoison64, 8);
    return;
  }
}

bool HostTensor::isPoisoned(int64_t i) const {
  const uint8_t *p = Data.data();
  switch (Type) {
  case DType::F32:
  case DType::I32: {
    uint32_t v;
    std::memcpy(&v, p + 4 * i, 4);
    return v == kPoison32;
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t v;
    std::memcpy(&v, p + 2 * i, 2);
    return v == (Type == DType::F16 ? kPoisonF16 : kPoisonBF16);
  }
  case DType::Bool: return p[i] == kPoisonBool;
  case DType::I64: {
    uint64_t v;
    std::memcpy(&v, p + 8 * i, 8);
    return v == kPoison64;
  }
  }
  llvm_unreachable("bad dtype");
}

namespace {
std::string indexText(const Shape &s, int64_t i) {
  llvm::SmallVector<int64_t, kMaxRank> idx(s.rank());
  for (int d = static_cast<int>(s.rank()) - 1; d >= 0; --d) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return Shape(llvm::ArrayRef<int64_t>(idx)).str();
}
} // namespace

CompareResult compareTensors(const HostTensor &got, const HostTensor &ref, Tolerance tol,
                             const HostTensor *magnitude, const HostTensor *bound) {
  CompareResult r;
  if (got.dtype() != ref.dtype() || got.shape() != ref.shape()) {
    r.ok = false;
    r.summary = llvm::formatv("type mismatch: got {0}{1}, expected {2}{3}", dtypeName(got.dtype()),
                              got.shape().str(), dtypeName(ref.dtype()), ref.shape().str())
                    .str();
    return r;
  }
  int64_t n = ref.numel();
  double sumSq = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = ref.get(i);
    if (std::isfinite(v)) {
      sumSq += v * v;
      ++finite;
    }
  }
  double scale = finite ? std::sqrt(sumSq / finite) : 0;
  for (int64_t i = 0; i < n; ++i) {
    double g = got.get(i), e = ref.get(i);
    bool bad = false;
    if (got.isPoisoned(i)) {
      ++r.unwritten;
      bad = true;
    } else if (ref.dtype() == DType::I64) {
      bad = got.getI64(i) != ref.getI64(i); // exact: the doubles round beyond 2^53
    } else if (std::isnan(e) || std::isnan(g)) {
      bad = std::isnan(e) != std::isnan(g);
    } else if (std::isinf(e) || std::isinf(g)) {
      bad = g != e && !(bound && std::isinf(bound->get(i)));
    } else {
      // Errors are relative to the value, the output's RMS and, when given,
      // the size of the terms reduced into it (sums that cancel).
      double s = scale;
      if (magnitude && std::isfinite(magnitude->get(i)))
        s = std::max(s, std::fabs(magnitude->get(i)));
      double err = std::fabs(g - e) / (std::fabs(e) + s + 1e-300);
      r.maxRelError = std::max(r.maxRelError, err);
      bad = tol.rtol == 0 ? g != e : std::fabs(g - e) > tol.rtol * (std::fabs(e) + s);
      // A 16-bit value whose rounding is certain (bound 0) must be exact: the
      // f16 tolerance alone would let a wrongly rounded store through.
      bool half = got.dtype() == DType::F16 || got.dtype() == DType::BF16;
      if (bound && half && !bad && g != e && bound->get(i) == 0) {
        bad = true;
        r.maxBounds = INFINITY;
      } else if (bad && bound) {
        double b = bound->get(i), d = std::fabs(g - e);
        bad = !(d <= tol.safety * b);
        if (bad)
          r.maxBounds = std::max(r.maxBounds, b > 0 ? d / b : INFINITY);
        else
          ++r.savedByBound;
      }
    }
    if (!bad)
      continue;
    ++r.mismatches;
    if (r.firstBad < 0) {
      r.firstBad = i;
      r.gotAtFirstBad = g;
      r.refAtFirstBad = e;
    }
  }
  r.ok = r.mismatches == 0;
  if (r.ok && n == 0) {
    r.summary = "ok (empty: no elements)";
    return r;
  }
  if (r.ok) {
    r.summary = llvm::formatv("ok (max rel error {0:e2})", r.maxRelError).str();
    if (r.savedByBound)
      r.summary += llvm::formatv(" ({0} within the error bound)", r.savedByBound).str();
    return r;
  }
  char values[96];
  if (ref.dtype() == DType::I64)
    std::snprintf(values, sizeof values, "got %lld, expected %lld",
                  static_cast<long long>(got.getI64(r.firstBad)),
                  static_cast<long long>(ref.getI64(r.firstBad)));
  else
    std::snprintf(values, sizeof values, "got %.8g, expected %.8g", r.gotAtFirstBad,
                  r.refAtFirstBad);
  std::string first = got.isPoisoned(r.firstBad) ? std::string("never written") : values;
  r.summary = llvm::formatv("{0} of {1} elements differ ({2} never written); first at {3}: {4}; "
                            "max rel error {5:e2}, tolerance {6:e2}",
                            r.mismatches, n, r.unwritten, indexText(ref.shape(), r.firstBad),
                            first, r.maxRelError, tol.rtol)
                  .str();
  if (bound && r.firstBad >= 0 && !got.isPoisoned(r.firstBad))
    r.summary += llvm::formatv("; error bound there {0:e2}, worst miss {1:f1} bounds (pass: {2})",
                               bound->get(r.firstBad), r.maxBounds, tol.safety)
                     .str();
  return r;
}

} // namespace minijit

//===- ir/Npy.cpp - host tensors in numpy's .npy format -------------------===//
// The format: the magic "\x93NUMPY", a version (1.0: a 2-byte header length;
// 2.0 and 3.0: 4 bytes), then a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces to a multiple of 64 bytes and ended by '\n', then the
// elements in C order.
//===----------------------------------------------------------------------===//
#include "ir/Npy.h"

#include "ir/Error.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

namespace minijit {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

/// The numpy element types this reader knows.
enum class NpyType { F4, F2, F8, I4, B1, I8 };

struct NpyHeader {
  NpyType type = NpyType::F4;
  Shape shape;
  size_t dataOffset = 0;
};

std::optional<NpyType> parseDescr(llvm::StringRef d) {
  if (d == "<f4")
    return NpyType::F4;
  if (d == "<f2")
    return NpyType::F2;
  if (d == "<f8")
    return NpyType::F8;
  if (d == "<i4")
    return NpyType::I4;
  if (d == "|b1")
    return NpyType::B1;
  if (d == "<i8")
    return NpyType::I8;
  return std::nullopt;
}

size_t npySize(NpyType t) {
  switch (t) {
  case NpyType::F4: return 4;
  case NpyType::F2: return 2;
  case NpyType::F8: return 8;
  case NpyType::I4: return 4;
  case NpyType::B1: return 1;
  case NpyType::I8: return 8;
  }
  return 0;
}

/// The dtype a file's elements have in minijit (f8 reads as f32).
DType dtypeOf(NpyType t) {
  switch (t) {
  case NpyType::F4:
  case NpyType::F8: return DType::F32;
  case NpyType::F2: return DType::F16;
  case NpyType::I4: return DType::I32;
  case NpyType::B1: return DType::Bool;
  case NpyType::I8: return DType::I64;
  }
  return DType::F32;
}

llvm::StringRef descrOf(NpyType t) {
  switch (t) {
  case NpyType::F4: return "<f4";
  case NpyType::F2: return "<f2";
  case NpyType::F8: return "<f8";
  case NpyType::I4: return "<i4";
  case NpyType::B1: return "|b1";
  case NpyType::I8: return "<i8";
  }
  return "";
}

/// Whether a file of type `file` may fill a tensor of dtype `want`.
bool converts(NpyType file, DType want) {
  switch (want) {
  case DType::F32: return file == NpyType::F4 || file == NpyType::F8;
  case DType::F16: return file == NpyType::F2 || file == NpyType::F8;
  case DType::BF16: return file == NpyType::F4 || file == NpyType::F8;
  case DType::I32: return file == NpyType::I4;
  case DType::Bool: return file == NpyType::B1;
  case DType::I64: return file == NpyType::I8;
  }
  return false;
}

class HeaderParser {
public:
  HeaderParser(llvm::StringRef text, const std::string &where) : Text(text), Where(where) {}

  NpyHeader parse() {
    NpyHeader h;
    bool haveDescr = false, haveOrder = false, haveShape = false;
    expect('{');
    while (skipSpace(), peek() != '}') {
      std::string key = quoted();
      expect(':');
      if (key == "descr") {
        std::string d = quoted();
        std::optional<NpyType> t = parseDescr(d);
        if (!t)
          fail(llvm::formatv("unsupported element type '{0}' (minijit reads <f4, <f2, <f8, <i4 "
                             "and |b1: little-endian f32, f16, f64, i32 and bool)",
                             d)
                   .str());
        h.type = *t;
        haveDescr = true;
      } else if (key == "fortran_order") {
        skipSpace();
        if (Text.substr(Pos).startswith("False")) {
          Pos += 5;
        } else if (Text.substr(Pos).startswith("True")) {
          fail("the array is in Fortran order; save it in C order (numpy.ascontiguousarray)");
        } else {
          fail("fortran_order is neither True nor False");
        }
        haveOrder = true;
      } else if (key == "shape") {
        h.shape = shape();
        haveShape = true;
      } else {
        fail("unknown key '" + key + "' in the header");
      }
      skipSpace();
      if (peek() == ',')
        ++Pos;
    }
    if (!haveDescr || !haveOrder || !haveShape)
      fail("the header lacks 'descr', 'fortran_order' or 'shape'");
    return h;
  }

private:
  [[noreturn]] void fail(const std::string &msg) {
    throw GraphError(Where + ": " + msg);
  }
  void skipSpace() {
    while (Pos < Text.size() && (Text[Pos] == ' ' || Text[Pos] == '\n'))
      ++Pos;
  }
  char peek() const { return Pos < Text.size() ? Text[Pos] : '\0'; }
  void expect(char c) {
    skipSpace();
    if (peek() != c)
      fail(llvm::formatv("malformed header: expected '{0}' at byte {1}", c, Pos).str());
    ++Pos;
  }
  std::string quoted() {
    skipSpace();
    char q = peek();
    if (q != '\'' && q != '"')
      fail(llvm::formatv("malformed header: expected a quoted string at byte {0}", Pos).str());
    size_t end = Text.find(q, Pos + 1);
    if (end == llvm::StringRef::npos)
      fail("malformed header: an unterminated string");
    std::string s = Text.substr(Pos + 1, end - Pos - 1).str();
    Pos = end + 1;
    return s;
  }
  Shape shape() {
    expect('(');
    llvm::SmallVector<int64_t, kMaxRank> dims;
    while (skipSpace(), peek() != ')') {
      size_t start = Pos;
      int64_t v = 0;
      while (Pos < Text.size() && Text[Pos] >= '0' && Text[Pos] <= '9') {
        if (v > (int64_t(1) << 50))
          fail("a dimension is too large");
        v = v * 10 + (Text[Pos++] - '0');
      }
      if (Pos == start)
        fail(llvm::formatv("malformed header: expected a dimension at byte {0}", Pos).str());
      dims.push_back(v);
      skipSpace();
      if (peek() == ',')
        ++Pos;
    }
    ++Pos;
    Shape s{llvm::ArrayRef<int64_t>(dims)};
    try {
      checkShape(s, "the array");
    } catch (const GraphError &e) {
      fail(e.what());
    }
    return s;
  }

  llvm::StringRef Text;
  std::string Where;
  size_t Pos = 0;
};

uint32_t readLE(const char *p, unsigned bytes) {
  uint32_t v = 0;
  for (unsigned i = 0; i < bytes; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

double elementOf(const char *p, NpyType t) {
  switch (t) {
  case NpyType::F4: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case NpyType::F2: return halfBitsToFloat(static_cast<uint16_t>(readLE(p, 2)));
  case NpyType::F8: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  case NpyType::I4: {
    int32_t i;
    std::memcpy(&i, p, 4);
    return i;
  }
  case NpyType::B1: return p[0] != 0 ? 1 : 0;
  case NpyType::I8: llvm_unreachable("i8 elements are read exactly, through setI64");
  }
  return 0;
}

} // namespace

HostTensor readNpy(std::string_view path, std::string_view what,
                   std::optional<std::pair<DType, Shape>> want) {
  std::string where = llvm::formatv("{0} ({1})", what, path).str();
  auto fail = [&](const std::string &msg) -> HostTensor { throw GraphError(where + ": " + msg); };
  // A device or a pipe (/dev/zero, a FIFO) has no size to bound the read by.
  llvm::sys::fs::file_status st;
  if (!llvm::sys::fs::status(llvm::Twine(llvm::StringRef(path)), st) &&
      !llvm::sys::fs::is_regular_file(st))
    return fail("not a regular file (a device, pipe or folder); .npy files are read from regular "
                "files only");
  auto buf = llvm::MemoryBuffer::getFile(llvm::StringRef(path), /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail("cannot read the file: " + buf.getError().message());
  llvm::StringRef bytes = (*buf)->getBuffer();
  if (bytes.size() < kMagicLen + 4 || !bytes.startswith(llvm::StringRef(kMagic, kMagicLen)))
    return fail("not a .npy file (no \\x93NUMPY magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3)
    return fail(llvm::formatv("unsupported .npy format version {0}.{1}", major,
                              static_cast<unsigned>(static_cast<unsigned char>(bytes[7])))
                    .str());
  unsigned lenBytes = major == 1 ? 2 : 4;
  size_t headerStart = 8 + lenBytes;
  if (bytes.size() < headerStart)
    return fail("the file is truncated in its header");
  size_t headerLen = readLE(bytes.data() + 8, lenBytes);
  if (bytes.size() < headerStart + headerLen)
    return fail("the file is truncated in its header");
  NpyHeader h = HeaderParser(bytes.substr(headerStart, headerLen), where).parse();
  h.dataOffset = headerStart + headerLen;

  DType dtype = dtypeOf(h.type);
  if (want) {
    if (!converts(h.type, want->first))
      return fail(llvm::formatv("the file holds {0} ({1}) but {2} is needed", descrOf(h.type),
                                dtypeName(dtype), dtypeName(want->first))
                      .str());
    if (h.shape != want->second)
      return fail(llvm::formatv("the file holds shape {0} but {1} is needed", h.shape.str(),
                                want->second.str())
                      .str());
    dtype = want->first;
  }
  size_t elem = npySize(h.type);
  size_t have = bytes.size() - h.dataOffset;
  size_t n = 1;
  bool overflow = false;
  size_t need = 0;
  for (int64_t d : h.shape.dims())
    overflow |= __builtin_mul_overflow(n, static_cast<size_t>(d), &n);
  overflow |= __builtin_mul_overflow(n, elem, &need);
  if (overflow)
    return fail(llvm::formatv("the file is truncated: the header's shape {0} needs more than 2^64 "
                              "bytes of data, the file has {1}",
                              h.shape.str(), have)
                    .str());
  if (have < need)
    return fail(llvm::formatv("the file is truncated: {0} elements of {1} bytes need {2} bytes "
                              "of data, it has {3}",
                              n, elem, n * elem, bytes.size() - h.dataOffset)
                    .str());
  HostTensor t(dtype, h.shape);
  const char *data = bytes.data() + h.dataOffset;
  if (h.type == NpyType::I8) {
    for (size_t i = 0; i < n; ++i) {
      int64_t v;
      std::memcpy(&v, data + i * elem, 8);
      t.setI64(static_cast<int64_t>(i), v);
    }
    return t;
  }
  for (size_t i = 0; i < n; ++i)
    t.set(static_cast<int64_t>(i), elementOf(data + i * elem, h.type));
  return t;
}

std::string npyBytes(const HostTensor &t) {
  NpyType type = NpyType::F4;
  switch (t.dtype()) {
  case DType::F32:
  case DType::BF16: type = NpyType::F4; break;
  case DType::F16: type = NpyType::F2; break;
  case DType::I32: type = NpyType::I4; break;
  case DType::Bool: type = NpyType::B1; break;
  case DType::I64: type = NpyType::I8; break;
  }
  std::string shape = "(";
  for (unsigned i = 0; i < t.shape().rank(); ++i)
    shape += std::to_string(t.shape()[i]) + (t.shape().rank() == 1 ? "," : i + 1 < t.shape().rank() ? ", " : "");
  shape += ")";
  std::string header = llvm::formatv("{{'descr': '{0}', 'fortran_order': False, 'shape': {1}, }",
                                     descrOf(type), shape)
                           .str();
  // Version 1.0 holds a header of up to 65535 bytes; longer needs 2.0.
  bool v2 = header.size() + 1 + 12 > 65535;
  size_t prefix = kMagicLen + 2 + (v2 ? 4 : 2);
  size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  size_t len = header.size();
  for (unsigned i = 0; i < (v2 ? 4u : 2u); ++i)
    out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += header;
  if (t.dtype() == DType::BF16) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      float f = static_cast<float>(t.get(i));
      out.append(reinterpret_cast<const char *>(&f), 4);
    }
    return out;
  }
  out.append(static_cast<const char *>(t.data()), t.bytes());
  return out;
}

void writeNpy(std::string_view path, const HostTensor &t) {
  std::string bytes = npyBytes(t);
  std::string temp = std::string(path) + ".tmp";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(temp, ec);
    if (ec)
      throw GraphError(llvm::formatv("cannot write {0}: {1}", temp, ec.message()).str());
    os << bytes;
    os.close();
    if (os.has_error()) {
      os.clear_error();
      llvm::sys::fs::remove(temp);
      throw GraphError(llvm::formatv("cannot write {0}: the write failed", temp).str());
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, llvm::StringRef(path))) {
    llvm::sys::fs::remove(temp);
    throw GraphError(llvm::formatv("cannot write {0}: {1}", path, ec.message()).str());
  }
}

} // namespace minijit

//===- compiler/Mutation.cpp - known miscompiles, injected for testing the tests ===//
// Each emitter mutation is a rewrite of the CUDA text (patterns of the code
// the emitter writes today; mutationSites() shows whether one still applies).
//===----------------------------------------------------------------------===//
#include "compiler/Mutation.h"

#include "ir/Error.h"

#include <atomic>
#include <cstdlib>
#include <regex>

namespace minijit {

namespace {

std::atomic<unsigned> Sites{0};

const Mutation kAll[] = {Mutation::IndexOffByOne,  Mutation::ReductionIdentity,
                         Mutation::DroppedEpilogue, Mutation::BroadcastStride,
                         Mutation::MissingBarrier,  Mutation::LostTail,
                         Mutation::F16StoreTruncates};

/// `text` with every match of `re` replaced by `with`; counts a site when
/// anything changed.
std::string replaceAll(const std::string &text, const std::regex &re, const std::string &with) {
  std::string out = std::regex_replace(text, re, with);
  if (out != text)
    ++Sites;
  return out;
}

/// Reads of the kernel's first input (the first const pointer parameter):
/// `x[E]` not followed by an assignment becomes `x[(E) + 1]`.
std::string offByOne(const std::string &cuda) {
  std::smatch m;
  static const std::regex param(R"(const \w+ \*__restrict__ (\w+))");
  if (!std::regex_search(cuda, m, param))
    return cuda;
  std::regex read("\\b" + m[1].str() + R"(\[([^\]\n]+)\](?!\s*=[^=]))");
  return replaceAll(cuda, read, m[1].str() + "[($1) + 1]");
}

std::string wrongIdentity(const std::string &cuda) {
  static const std::regex zero(R"((\w+_acc(?:\[\w+\])* = )0(\.0f)?;)");
  static const std::regex one(R"((\w+_acc(?:\[\w+\])* = )1(\.0f)?;)");
  static const std::regex inf(R"((\w+_acc(?:\[\w+\])* = )\(?-?MJ_INF\)?;)");
  std::string out = replaceAll(cuda, one, "$012$2;"); // products first, so sums' 1 stays
  out = replaceAll(out, zero, "$011$2;");
  return replaceAll(out, inf, "$010.0f;");
}

/// The first op computed after a reduction's or a matmul's result takes the
/// value defined just before it instead.
std::string droppedEpilogue(const std::string &cuda) {
  size_t from = cuda.find("// epilogue");
  for (const char *r : {"mj_warp_reduce<", "mj_block_reduce<", "mj_col_reduce<"})
    from = std::min(from, cuda.find(r));
  if (from == std::string::npos)
    return cuda;
  static const std::regex def(R"(const float (\w+) = ([^;\n]+); // %)");
  std::string prev;
  for (std::sregex_iterator it(cuda.begin() + from, cuda.end(), def), end; it != end; ++it) {
    const std::smatch &m = *it;
    std::string expr = m[2].str();
    bool isOp = expr.find_first_of("+-*/(<>!?") != std::string::npos &&
                expr.find('[') == std::string::npos;
    if (isOp && !prev.empty()) {
      ++Sites;
      size_t at = from + m.position(2);
      return cuda.substr(0, at) + prev + cuda.substr(at + expr.size());
    }
    prev = m[1].str();
  }
  return cuda;
}

std::string lostTail(const std::string &cuda) {
  static const std::regex row(R"(\bk < (\d+))");
  static const std::regex tail(R"((blockIdx\.x == 0 && threadIdx\.x < )(\d+)\))");
  return replaceAll(replaceAll(cuda, row, "k < $1 - 1"), tail, "$1$2 - 1)");
}

std::string replaceOnce(std::string text, const std::string &from, const std::string &to) {
  size_t at = text.find(from);
  if (at == std::string::npos)
    return text;
  ++Sites;
  return text.replace(at, from.size(), to);
}

} // namespace

llvm::ArrayRef<Mutation> allMutations() { return kAll; }

llvm::StringRef mutationName(Mutation m) {
  switch (m) {
  case Mutation::None: return "none";
  case Mutation::IndexOffByOne: return "index-off-by-one";
  case Mutation::ReductionIdentity: return "reduction-identity";
  case Mutation::DroppedEpilogue: return "dropped-epilogue";
  case Mutation::BroadcastStride: return "broadcast-stride";
  case Mutation::MissingBarrier: return "missing-barrier";
  case Mutation::LostTail: return "lost-tail";
  case Mutation::F16StoreTruncates: return "f16-store-truncates";
  }
  return "none";
}

Mutation activeMutation() {
  const char *env = std::getenv("MINIJIT_MUTATION");
  if (!env || !*env)
    return Mutation::None;
  std::string names;
  for (Mutation m : kAll) {
    if (mutationName(m) == env)
      return m;
    names += (names.empty() ? "" : ", ") + mutationName(m).str();
  }
  throw CompileError("MINIJIT_MUTATION=" + std::string(env) + " is not a mutation (" + names + ")");
}

std::string mutateKernel(std::string cuda) {
  switch (activeMutation()) {
  case Mutation::IndexOffByOne: return offByOne(cuda);
  case Mutation::ReductionIdentity: return wrongIdentity(cuda);
  case Mutation::DroppedEpilogue: return droppedEpilogue(cuda);
  case Mutation::LostTail: return lostTail(cuda);
  case Mutation::None:
  case Mutation::BroadcastStride:
  case Mutation::MissingBarrier:
  case Mutation::F16StoreTruncates: return cuda;
  }
  return cuda;
}

std::string mutatePreamble(std::string preamble) {
  switch (activeMutation()) {
  case Mutation::MissingBarrier:
    preamble = replaceOnce(std::move(preamble),
                           "if (threadIdx.x % 32 == 0) smem[threadIdx.x / 32] = v;\n  __syncthreads();",
                           "if (threadIdx.x % 32 == 0) smem[threadIdx.x / 32] = v;");
    return replaceOnce(std::move(preamble),
                       "smem[threadIdx.x / 32][threadIdx.x % 32] = v;\n  __syncthreads();",
                       "smem[threadIdx.x / 32][threadIdx.x % 32] = v;");
  case Mutation::F16StoreTruncates:
    preamble = replaceOnce(std::move(preamble), "cvt.rn.f16.f32", "cvt.rz.f16.f32");
    return replaceOnce(std::move(preamble), "cvt.rn.bf16.f32", "cvt.rz.bf16.f32");
  case Mutation::None:
  case Mutation::IndexOffByOne:
  case Mutation::ReductionIdentity:
  case Mutation::DroppedEpilogue:
  case Mutation::BroadcastStride:
  case Mutation::LostTail: return preamble;
  }
  return preamble;
}

LoweringOptions mutatedLowering() {
  LoweringOptions options;
  options.misreadBroadcasts = activeMutation() == Mutation::BroadcastStride;
  return options;
}

void countMutationSites(unsigned n) { Sites += n; }

unsigned mutationSites() { return Sites; }

} // namespace minijit

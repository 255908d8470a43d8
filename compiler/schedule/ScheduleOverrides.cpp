//===- compiler/schedule/ScheduleOverrides.cpp - hand-set schedule parameters ---===//
// The keys' spellings, their text form, and the one read of $MINIJIT_SCHEDULE.
//===----------------------------------------------------------------------===//
#include "compiler/schedule/ScheduleOverrides.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdlib>

namespace minijit {

namespace {

/// A key and its field: an integer, or (cached) a flag.
struct Key {
  const char *name;
  std::optional<int64_t> ScheduleOverrides::*field;
  std::optional<bool> ScheduleOverrides::*flag = nullptr;
};

/// In the order str() writes them: each template's geometry first, then its
/// variants, so the texts a search builds read as they always have.
// clang-format off
const Key kKeys[] = {
    {"tile", &ScheduleOverrides::tile},       {"bm", &ScheduleOverrides::bm},
    {"bn", &ScheduleOverrides::bn},           {"bk", &ScheduleOverrides::bk},
    {"tpr", &ScheduleOverrides::tpr},         {"block", &ScheduleOverrides::block},
    {"transpose", &ScheduleOverrides::transpose}, {"vec", &ScheduleOverrides::vec},
    {"items", &ScheduleOverrides::items},     {"parts", &ScheduleOverrides::parts},
    {"splits", &ScheduleOverrides::splits},   {"online", &ScheduleOverrides::online},
    {"cached", nullptr, &ScheduleOverrides::cached}, {"ahead", &ScheduleOverrides::ahead},
    {"tn", &ScheduleOverrides::tn},           {"cpasync", &ScheduleOverrides::cpasync},
    {"krows", &ScheduleOverrides::krows},     {"stages", &ScheduleOverrides::stages},
    {"staged", &ScheduleOverrides::staged},   {"frag", &ScheduleOverrides::frag},
    {"wm", &ScheduleOverrides::wm},           {"wn", &ScheduleOverrides::wn},
    {"wgmma", &ScheduleOverrides::wgmma},     {"pingpong", &ScheduleOverrides::pingpong},
    {"cluster", &ScheduleOverrides::cluster}, {"rowcluster", &ScheduleOverrides::rowcluster},
    {"pad", &ScheduleOverrides::pad},         {"splitk", &ScheduleOverrides::splitk},
    {"chain", &ScheduleOverrides::chain},     {"promote", &ScheduleOverrides::promote},
    {"tf32x3", nullptr, &ScheduleOverrides::tf32x3}, {"split3", &ScheduleOverrides::split3},
    {"overlap", &ScheduleOverrides::overlap}, {"rpt", &ScheduleOverrides::rpt},
    {"terms", &ScheduleOverrides::terms},
};
// clang-format on

/// The value of key `k` in `o`, if set (a flag as 0 or 1).
std::optional<int64_t> valueOf(const ScheduleOverrides &o, const Key &k) {
  if (k.field)
    return o.*(k.field);
  if (std::optional<bool> b = o.*(k.flag))
    return *b ? 1 : 0;
  return std::nullopt;
}

} // namespace

bool ScheduleOverrides::empty() const {
  return llvm::all_of(kKeys, [&](const Key &k) { return !valueOf(*this, k); });
}

std::string ScheduleOverrides::str() const {
  std::string out;
  for (const Key &k : kKeys)
    if (std::optional<int64_t> v = valueOf(*this, k))
      out += (out.empty() ? "" : ",") + std::string(k.name) + "=" + std::to_string(*v);
  return out;
}

bool ScheduleOverrides::operator==(const ScheduleOverrides &other) const {
  return llvm::all_of(kKeys, [&](const Key &k) { return valueOf(*this, k) == valueOf(other, k); });
}

Expected<ScheduleOverrides> parseScheduleOverrides(std::string_view textView) {
  ScheduleOverrides o;
  llvm::StringRef text(textView.data(), textView.size());
  llvm::SmallVector<llvm::StringRef, 8> parts;
  text.split(parts, ',', -1, false);
  for (llvm::StringRef p : parts) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one.
    std::pair<llvm::StringRef, llvm::StringRef> kv = p.trim().split('=');
    llvm::StringRef key = kv.first, value = kv.second;
    const Key *k = llvm::find_if(kKeys, [&](const Key &k) { return key == k.name; });
    if (k == std::end(kKeys)) {
      std::string known;
      for (const Key &each : kKeys)
        known += (known.empty() ? "" : ", ") + std::string(each.name);
      return Refusal{"schedule override: unknown key '" + key.str() + "' (known: " + known + ")"};
    }
    int64_t v = 0;
    if (value.getAsInteger(10, v) || v < 0)
      return Refusal{"schedule override: '" + p.str() + "' needs a non-negative integer"};
    if (k->field)
      o.*(k->field) = v;
    else
      o.*(k->flag) = v != 0;
  }
  return o;
}

std::string scheduleEnvironmentText() {
  const char *env = std::getenv("MINIJIT_SCHEDULE");
  return env ? env : "";
}

} // namespace minijit

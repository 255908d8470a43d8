//===- compiler/schedule/ScheduleOverrides.cpp - hand-set schedule parameters ---===//
#include "compiler/schedule/ScheduleOverrides.h"

#include "ir/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace minijit {

namespace {

struct Key {
  const char *name;
  std::optional<int64_t> ScheduleOverrides::*field;
};

const Key kKeys[] = {
    {"block", &ScheduleOverrides::block}, {"vec", &ScheduleOverrides::vec},
    {"items", &ScheduleOverrides::items}, {"tpr", &ScheduleOverrides::tpr},
    {"cached", nullptr},                  {"parts", &ScheduleOverrides::parts},
    {"tile", &ScheduleOverrides::tile},   {"bm", &ScheduleOverrides::bm},
    {"bn", &ScheduleOverrides::bn},       {"bk", &ScheduleOverrides::bk},
    {"stages", &ScheduleOverrides::stages}, {"frag", &ScheduleOverrides::frag},
    {"wm", &ScheduleOverrides::wm},       {"wn", &ScheduleOverrides::wn},
    {"splits", &ScheduleOverrides::splits}, {"transpose", &ScheduleOverrides::transpose},
    {"online", &ScheduleOverrides::online}, {"wgmma", &ScheduleOverrides::wgmma},
    {"pingpong", &ScheduleOverrides::pingpong}, {"ahead", &ScheduleOverrides::ahead},
    {"pad", &ScheduleOverrides::pad},     {"splitk", &ScheduleOverrides::splitk},
    {"cluster", &ScheduleOverrides::cluster}, {"rowcluster", &ScheduleOverrides::rowcluster},
    {"staged", &ScheduleOverrides::staged}, {"tn", &ScheduleOverrides::tn},
    {"cpasync", &ScheduleOverrides::cpasync}, {"krows", &ScheduleOverrides::krows},
};

} // namespace

bool ScheduleOverrides::empty() const {
  return !cached && llvm::all_of(kKeys, [&](const Key &k) { return !k.field || !(this->*k.field); });
}

ScheduleOverrides parseScheduleOverrides(llvm::StringRef text) {
  ScheduleOverrides o;
  llvm::SmallVector<llvm::StringRef, 8> parts;
  text.split(parts, ',', -1, false);
  for (llvm::StringRef p : parts) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one.
    std::pair<llvm::StringRef, llvm::StringRef> kv = p.trim().split('=');
    llvm::StringRef key = kv.first, value = kv.second;
    const Key *k = llvm::find_if(kKeys, [&](const Key &k) { return key == k.name; });
    if (k == std::end(kKeys))
      throw CompileError("schedule override: unknown key '" + key.str() +
                         "' (known: block, vec, items, tpr, cached, online, ahead, parts, splits, "
                         "transpose, tile, bm, bn, bk, stages, frag, wm, wn, wgmma, pingpong, "
                         "cluster, rowcluster, staged, tn, cpasync, krows, pad, splitk)");
    int64_t v = 0;
    if (value.getAsInteger(10, v) || v < 0)
      throw CompileError("schedule override: '" + p.str() + "' needs a non-negative integer");
    if (k->field)
      o.*(k->field) = v;
    else
      o.cached = v != 0;
  }
  return o;
}

} // namespace minijit

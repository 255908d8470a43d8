#!/usr/bin/env bash
# Installs minijit (built in ./build, or $BUILD_DIR) into a temporary prefix,
# then builds and runs samples/consumer against it with find_package(minijit)
# in a C++-only project: what another project does. Compile only without a
# GPU. Fails when
#   - an installed header includes an LLVM header, or names LLVM;
#   - the installed headers miss one that minijit.h includes (transitively),
#     or hold one that minijit.h does not need (only public headers install);
#   - an LLVM include folder or definition reaches the consumer's compile
#     lines (its compile_commands.json), or an LLVM header is reachable from
#     them at all (a probe that includes one must fail to compile: the
#     consumer builds as it would with no LLVM installed).
# Then it reports how long the consumer's translation unit takes to compile
# (the best of three; issue 19's target is at most 1 s).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d)
trap 'rm -rf "$prefix" "$prefix-build"' EXIT
cmake --install "${BUILD_DIR:-build}" --prefix "$prefix" > /dev/null
cmake -S samples/consumer -B "$prefix-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$prefix-build" -j"$(nproc)" > /dev/null
"$prefix-build/consumer" | tail -3
python3 - "$prefix/include" "$prefix-build/compile_commands.json" <<'PY'
import json, os, re, shlex, subprocess, sys, tempfile, time
include, commands = sys.argv[1], json.load(open(sys.argv[2]))
bad = []

# The installed headers against the include closure of minijit/minijit.h.
installed = set()
for d, _, files in os.walk(include):
    installed |= {os.path.relpath(os.path.join(d, f), include) for f in files}
# The C API's header (minijit-c/) is checked below, compiled as C.
installed = {h for h in installed if not h.startswith("minijit-c/")}
needed, pending = set(), ["minijit/minijit.h"]
while pending:
    h = pending.pop()
    if h in needed:
        continue
    needed.add(h)
    if h not in installed:
        bad.append(f"{h} is not installed, but minijit.h needs it")
        continue
    text = open(os.path.join(include, h)).read()
    for m in re.finditer(r'#\s*include\s*[<"]((?:llvm|llvm-c)/[^>"]+)[>"]', text):
        bad.append(f"the installed {h} includes the LLVM header {m.group(1)}")
    if re.search(r"llvm::|namespace llvm", text):
        bad.append(f"the installed {h} names LLVM")
    pending += re.findall(r'#\s*include\s*"(minijit/[^"]+)"', text)
for h in sorted(installed - needed):
    bad.append(f"{h} is installed, but minijit.h does not include it (only public headers install)")

# The consumer's compile lines: no LLVM include folder or definition, and no
# LLVM header reachable through them.
llvm_defines = {"_GNU_SOURCE", "__STDC_CONSTANT_MACROS", "__STDC_FORMAT_MACROS", "__STDC_LIMIT_MACROS"}
consumer = None
for c in commands:
    args = shlex.split(c["command"])
    for i, a in enumerate(args):
        value = None
        if a in ("-I", "-isystem", "-iquote", "-idirafter") and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith(("-I", "-isystem")) and a not in ("-I", "-isystem"):
            value = a[2:] if a.startswith("-I") else a[len("-isystem"):]
        if value is not None and "llvm" in value.lower():
            bad.append(f"{c['file']}: LLVM include folder {value}")
        if a.startswith("-D") and a[2:].split("=")[0] in llvm_defines:
            bad.append(f"{c['file']}: LLVM definition {a}")
    if c["file"].endswith("main.cpp"):
        consumer = (c, args)
if consumer is None:
    bad.append("compile_commands.json lists no compile line for main.cpp")
for b in bad:
    print("consumer: error:", b)
if bad:
    sys.exit(1)

c, args = consumer
def compile_line(source, out):
    line = list(args)
    line[line.index(c["file"]) if c["file"] in line else -1] = source
    line[line.index("-o") + 1] = out
    return line
with tempfile.TemporaryDirectory() as tmp:
    probe = os.path.join(tmp, "probe.cpp")
    with open(probe, "w") as f:
        f.write("#include <llvm/ADT/StringRef.h>\n")
    r = subprocess.run(compile_line(probe, os.path.join(tmp, "probe.o")), cwd=c["directory"],
                       capture_output=True)
    if r.returncode == 0:
        print("consumer: error: an LLVM header is reachable from the consumer's compile line")
        sys.exit(1)
    times = []
    for _ in range(3):
        t0 = time.monotonic()
        subprocess.run(compile_line(c["file"], os.path.join(tmp, "main.o")), cwd=c["directory"],
                       check=True)
        times.append(time.monotonic() - t0)
print(f"consumer: {len(needed)} installed headers, the include closure of minijit.h: none "
      f"includes LLVM; {len(commands)} compile line(s) checked: no LLVM include folder or "
      f"definition, and no LLVM header reachable")
print(f"consumer: main.cpp compiles in {min(times):.2f} s (best of 3: "
      + ", ".join(f"{t:.2f}" for t in times) + " s; target 1 s)")
PY
# The C API as installed: its header compiles as C99 on its own, and a C
# program links the installed libminijit_c.so and runs.
capi_lib=$(dirname "$(find "$prefix" -name libminijit_c.so | head -1)")
cc -std=c99 -Wall -Wextra -Werror -pedantic -I"$prefix/include" -x c - -o "$prefix-build/c_consumer" \
   -L"$capi_lib" -lminijit_c -Wl,-rpath,"$capi_lib" <<'C'
#include <minijit-c/minijit.h>
#include <stdio.h>
int main(void) {
  mjGraph g = NULL;
  mjCompiled c = NULL;
  if (mjGraphParse("graph f(%x: f32[64]) {\n  %y = exp %x\n  return %y\n}\n", NULL, NULL, &g) != MJ_OK ||
      mjCompile(g, NULL, NULL, &c) != MJ_OK) {
    fprintf(stderr, "%s\n", mjGetLastError());
    return 1;
  }
  printf("consumer: the C API %s compiled a graph into %zu kernel(s)\n", mjVersion(), mjCompiledNumKernels(c));
  mjCompiledDestroy(c);
  mjGraphDestroy(g);
  return 0;
}
C
"$prefix-build/c_consumer"
echo "consumer: built and ran against the minijit installed in $prefix"

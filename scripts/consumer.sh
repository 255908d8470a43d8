#!/usr/bin/env bash
# Installs minijit (built in ./build) into a temporary prefix, then builds and
# runs samples/consumer against it with find_package(minijit) in a C++-only
# project: what another project does. Compile only without a GPU. Then checks
# the consumer's compile lines (its compile_commands.json): no LLVM definition
# reaches them, and no LLVM include folder unless the installed headers still
# include LLVM headers (then only the package's MINIJIT_LLVM_INCLUDE, reported).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d)
trap 'rm -rf "$prefix" "$prefix-build"' EXIT
cmake --install ${BUILD_DIR:-build} --prefix "$prefix" > /dev/null
cmake -S samples/consumer -B "$prefix-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$prefix-build" -j"$(nproc)" > /dev/null
"$prefix-build/consumer" | tail -3
# The installed headers that include an LLVM header, and the LLVM include folder
# the package gives them (empty once no installed header includes LLVM).
llvm_headers=$({ grep -rlE '#include [<"](llvm|llvm-c)/' "$prefix/include" || true; } | wc -l)
llvm_include=""
if [[ $llvm_headers -gt 0 ]]; then
  llvm_include=$(sed -n 's/^  set(MINIJIT_LLVM_INCLUDE "\(.*\)")$/\1/p' "$prefix"/lib*/cmake/minijit/minijitConfig.cmake)
fi
python3 - "$prefix-build/compile_commands.json" "$llvm_include" "$llvm_headers" <<'PY'
import json, shlex, sys
commands, allowed, headers = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
llvm_defines = {"_GNU_SOURCE", "__STDC_CONSTANT_MACROS", "__STDC_FORMAT_MACROS", "__STDC_LIMIT_MACROS"}
bad = []
for c in commands:
    args = shlex.split(c["command"])
    for i, a in enumerate(args):
        value = None
        if a in ("-I", "-isystem") and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith("-I") and len(a) > 2:
            value = a[2:]
        if value is not None and "llvm" in value.lower() and value != allowed:
            bad.append(f"{c['file']}: LLVM include folder {value}")
        if a.startswith("-D") and a[2:].split("=")[0] in llvm_defines:
            bad.append(f"{c['file']}: LLVM definition {a}")
if not commands:
    bad.append("compile_commands.json lists no compile line")
for b in bad:
    print("consumer: error:", b)
if bad:
    sys.exit(1)
note = (f"; {headers} installed headers still include LLVM headers, so {allowed} is on them"
        if headers else "; the installed headers include no LLVM header")
print(f"consumer: {len(commands)} compile line(s) checked: no LLVM definition" + note)
PY
echo "consumer: built and ran against the minijit installed in $prefix"

#!/usr/bin/env python3
"""Checks that libminijit_c.so exports exactly the functions minijit-c/minijit.h
declares: every declared function is there, and nothing else (no C++ or LLVM
symbol) is visible.

    check_exports.py LIBRARY HEADER
"""
import re
import subprocess
import sys

lib, header = sys.argv[1], sys.argv[2]
declared = set(re.findall(r"^MJ_API [^(]*?\b(mj\w+)\(", open(header).read(), re.M))
out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                     check=True).stdout
exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
bad = sorted("declared but not exported: " + s for s in declared - exported)
bad += sorted("exported but not declared: " + s for s in exported - declared)
for b in bad:
    print("check_exports: error:", b)
if not declared:
    print("check_exports: error: no MJ_API declaration found in", header)
    sys.exit(1)
print("check_exports: %d functions declared, exported, and nothing else" % len(declared))
sys.exit(1 if bad else 0)

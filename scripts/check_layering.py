#!/usr/bin/env python3
"""Checks the include layering that docs/ARCHITECTURE.md states, so that a
change that breaks it fails the build (a target of the default build runs it):

  ir  <  runtime  <  compiler  <  tools, capi

and inside compiler/ the stages in pipeline order:

  simplify < fusion < lower < schedule < emit < templates < nvrtc < cache < tune < compiler/ itself

A file may include headers of its own folder and of earlier folders only:
never a later stage's header, so no two folders include each other. Prints
each violation as FILE:LINE: and exits 1 when there is one.

  scripts/check_layering.py [ROOT]     ROOT: the repository (default: this script's parent)
"""
import pathlib
import re
import sys

LAYERS = ["ir", "runtime", "compiler/simplify", "compiler/fusion", "compiler/lower",
          "compiler/schedule", "compiler/emit", "compiler/templates", "compiler/nvrtc", "compiler/cache",
          "compiler/tune", "compiler"]
# Folders above the library: they may include any layer.
TOP = ["tools", "capi"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path: str):
    """The layer a repository path (a file or an include) belongs to, or None."""
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    for name in sorted(LAYERS, key=len, reverse=True):
        if folder == name or folder.startswith(name + "/"):
            return name
    return None


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
    rank = {name: i for i, name in enumerate(LAYERS)}
    bad = []
    checked = 0
    for top in ["ir", "runtime", "compiler"]:
        for f in sorted((root / top).rglob("*")):
            if f.suffix not in (".h", ".cpp", ".def"):
                continue
            rel = f.relative_to(root).as_posix()
            mine = layer_of(rel)
            checked += 1
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = layer_of(m.group(1))
                if m.group(1).split("/")[0] in TOP:
                    bad.append(f"{rel}:{n}: includes {m.group(1)}, of a folder above the library")
                elif target is not None and rank[target] > rank[mine]:
                    bad.append(f"{rel}:{n}: {mine} includes {m.group(1)}, of the later stage {target}")
    for b in bad:
        print(b)
    if bad:
        print(f"check_layering: {len(bad)} includes against the layering (docs/ARCHITECTURE.md)")
        return 1
    print(f"check_layering: {checked} files keep the layering")
    return 0


if __name__ == "__main__":
    sys.exit(main())

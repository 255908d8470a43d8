#!/usr/bin/env python3
"""Checks the include layering that docs/ARCHITECTURE.md states, so that a
change that breaks it fails the build (a target of the default build runs it):

  ir  <  runtime  <  compiler  <  tools, capi

and inside compiler/ the stages in pipeline order:

  simplify < fusion < lower < schedule < emit < templates < nvrtc < cache < tune < compiler/ itself

A file may include headers of its own folder and of earlier folders only:
never a later stage's header, so no two folders include each other. Inside
templates/, the families of templates (a folder each: templates/pointwise/,
rows/, ...) sit between the interface and the registry:

  templates/*.h, *.def (the KernelTemplate interface and what families share)
    < templates/<family>/ (each family's rules, bodies and template objects)
    < templates/*.cpp (the registry and the scheduling stage, which reach the
      families' rules through the interface)

and no family includes another's headers. The templates' parameters are the
exception, read by every stage from scheduling on: each family's parameter
structs (templates/<family>/*Params.h), the base they share
(templates/LaunchGeometry.h), their list (templates/Params.h) and the
registry of templates (templates/Templates.def) sit between lowering and
scheduling:

  lower < the templates' parameters < schedule

and include nothing later; no family's parameters include another family's.
Prints each violation as FILE:LINE: and exits 1 when there is one.

  scripts/check_layering.py [ROOT]     ROOT: the repository (default: this script's parent)
"""
import pathlib
import re
import sys

LAYERS = ["ir", "runtime", "compiler/simplify", "compiler/fusion", "compiler/lower",
          "compiler/schedule", "compiler/emit", "compiler/templates", "compiler/nvrtc", "compiler/cache",
          "compiler/tune", "compiler"]
# The folder of template families: templates/FAMILY/ for any FAMILY. Files
# directly in it are its interface (headers) or its registry (sources).
FAMILIES = "compiler/templates"
# The templates' parameters, a layer of their own between lowering and
# scheduling: files of FAMILIES (or of a family in it) with these names.
PARAMS = "compiler/templates (parameters)"
PARAMS_FILES = ("LaunchGeometry.h", "Params.h", "Templates.def")
# Folders above the library: they may include any layer.
TOP = ["tools", "capi"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path: str):
    """The layer a repository path (a file or an include) belongs to, or None."""
    folder, _, name = path.rpartition("/")
    if folder.startswith(FAMILIES) and (name in PARAMS_FILES or name.endswith("Params.h")):
        family = folder[len(FAMILIES) + 1:].split("/")[0]
        return PARAMS + ("/" + family if family else "")
    if folder.startswith(FAMILIES + "/"):
        return FAMILIES + "/" + folder[len(FAMILIES) + 1:].split("/")[0]
    if folder == FAMILIES:
        return FAMILIES if path.endswith(".cpp") else FAMILIES + " (interface)"
    for name in sorted(LAYERS, key=len, reverse=True):
        if folder == name or folder.startswith(name + "/"):
            return name
    return None


def rank_of(layer: str, rank: dict):
    """A layer's place in the order: a template family's is between the
    templates' interface and their registry."""
    if layer.startswith(PARAMS):
        return rank["compiler/schedule"] - 0.5
    if layer == FAMILIES + " (interface)":
        return rank[FAMILIES] - 0.5
    if layer.startswith(FAMILIES + "/"):
        return rank[FAMILIES] - 0.25
    return rank[layer]


def family_of(layer: str):
    """The template family a layer belongs to (its folder's name, for its
    rules and bodies or its parameters), or None."""
    for prefix in (FAMILIES + "/", PARAMS + "/"):
        if layer.startswith(prefix):
            return layer[len(prefix):]
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
                elif target is not None and rank_of(target, rank) > rank_of(mine, rank):
                    bad.append(f"{rel}:{n}: {mine} includes {m.group(1)}, of the later stage {target}")
                elif (target is not None and family_of(mine) and family_of(target)
                      and family_of(mine) != family_of(target)):
                    bad.append(f"{rel}:{n}: the family {mine} includes {m.group(1)}, of the family {target}")
    for b in bad:
        print(b)
    if bad:
        print(f"check_layering: {len(bad)} includes against the layering (docs/ARCHITECTURE.md)")
        return 1
    print(f"check_layering: {checked} files keep the layering")
    return 0


if __name__ == "__main__":
    sys.exit(main())

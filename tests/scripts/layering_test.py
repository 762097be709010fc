#!/usr/bin/env python3
"""The house's structure holds (docs/architecture.md, "Layers"). Run by ctest (scripts.layering).

- Each folder of sim/ is a layer with a library of its own in sim/CMakeLists.txt, in the order
  RANK below (written here, not read from the CMake file, so that a link added upward there is
  caught too); its target_link_libraries name only layers of lower rank. A file of one layer
  includes headers of its own layer and of the layers its library links (directly or through
  them), never one above.
- Every .cpp in sim/<layer>/ is built into that layer's library, and only there.
- models/ never includes sim/ (hardware models see parameter structs, never YAML or traces).
- No source file in sim/ or models/ is longer than 600 lines.

Before checking the tree, the checker is shown a tree with an upward include, a file in the
wrong library and a long file, and must find all three: a checker that finds nothing fails."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_LINES = 600
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](sim|models)/([a-z_0-9]+)/', re.M)
ANY_SIM = re.compile(r'^\s*#\s*include\s*[<"]sim/', re.M)
# The layers, lowest first (docs/architecture.md, "Layers"): a layer may link only lower ranks.
RANK = {"io": 0, "config": 0, "trace": 1, "lower": 2, "engine": 3, "report": 4, "sweep": 5, "cli": 6}


def read_layers(cmake_text):
    """{layer: (set of its sources, set of layers it links)} from sim/CMakeLists.txt."""
    layers = {}
    for m in re.finditer(r"add_library\(xpusim_(\w+) STATIC\s+([^)]*)\)", cmake_text):
        layers[m.group(1)] = (set(m.group(2).split()), set())
    for m in re.finditer(r"target_link_libraries\(xpusim_(\w+)\s+([^)]*)\)", cmake_text):
        if m.group(1) in layers:
            layers[m.group(1)][1].update(x[len("xpusim_"):] for x in m.group(2).split()
                                         if x.startswith("xpusim_") and x[len("xpusim_"):] in layers)
    return layers


def below(layers, layer):
    """Every layer `layer` links, directly or through another."""
    seen, todo = set(), [layer]
    while todo:
        for d in layers[todo.pop()][1]:
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def check(files, cmake_text):
    """files: {relative path: text}. Returns what breaks the rules, one line each."""
    layers = read_layers(cmake_text)
    bad = []
    if len(layers) < 2:
        return [f"sim/CMakeLists.txt: found {len(layers)} layer libraries (expected one per folder of sim/)"]
    for name, (_, links) in sorted(layers.items()):
        if name not in RANK:
            bad.append(f"sim/CMakeLists.txt: xpusim_{name} is no layer this test knows (add it to RANK, in order)")
            continue
        for d in sorted(links):
            if RANK.get(d, -1) >= RANK[name]:
                bad.append(f"sim/CMakeLists.txt: xpusim_{name} links xpusim_{d}, which is not below it")
    for path, text in sorted(files.items()):
        parts = path.split("/")
        if len(parts) >= 3 and parts[0] in ("sim", "models") and text.count("\n") > MAX_LINES:
            bad.append(f"{path}: {text.count(chr(10))} lines (split it by concern; at most {MAX_LINES})")
        if parts[0] == "models":
            for m in ANY_SIM.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{path}:{line}: a hardware model includes from sim/")
            continue
        if parts[0] != "sim" or len(parts) < 3:
            continue
        layer = parts[1]
        if layer not in layers:
            bad.append(f"{path}: folder sim/{layer}/ has no library xpusim_{layer} in sim/CMakeLists.txt")
            continue
        rank = RANK.get(layer, -1)
        allowed = {x for x in below(layers, layer) if RANK.get(x, rank) < rank} | {layer}
        for m in INCLUDE.finditer(text):
            if m.group(1) != "sim" or m.group(2) in allowed:
                continue
            line = text.count("\n", 0, m.start()) + 1
            what = "a layer not below it" if RANK.get(m.group(2), -1) >= rank else "a layer it does not link"
            bad.append(f"{path}:{line}: layer {layer} includes sim/{m.group(2)}/, {what}")
        if path.endswith(".cpp"):
            rel = "/".join(parts[1:])  # as sim/CMakeLists.txt names it
            owners = [name for name, (sources, _) in layers.items() if rel in sources]
            if owners != [layer]:
                bad.append(f"{path}: built into {', '.join('xpusim_' + o for o in owners) or 'no library'}, "
                           f"not xpusim_{layer} alone")
    return bad


def tree():
    files = {}
    for top in ("sim", "models"):
        for folder, _, names in os.walk(os.path.join(ROOT, top)):
            for name in names:
                if name.endswith((".cpp", ".h")):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8") as f:
                        files[os.path.relpath(path, ROOT)] = f.read()
    return files


def main():
    with open(os.path.join(ROOT, "sim", "CMakeLists.txt"), encoding="utf-8") as f:
        cmake_text = f.read()
    files = tree()
    # The checker, shown what it must catch.
    planted = dict(files)
    planted["sim/engine/planted.h"] = '#pragma once\n#include "sim/report/report.h"\n'
    planted["sim/lower/planted.cpp"] = "// in no library\n"
    planted["models/sm/planted.h"] = "\n" * (MAX_LINES + 1)
    planted["models/sm/planted_include.h"] = "#include <sim/error.h>\n"
    upward = cmake_text.replace("target_link_libraries(xpusim_engine PUBLIC", "target_link_libraries(xpusim_engine PUBLIC xpusim_report")
    caught = check(planted, upward)
    for must in ("sim/engine/planted.h:2: layer engine includes sim/report/, a layer not below it",
                 "sim/lower/planted.cpp: built into no library", "models/sm/planted.h: 601 lines",
                 "models/sm/planted_include.h:1: a hardware model includes from sim/",
                 "sim/CMakeLists.txt: xpusim_engine links xpusim_report, which is not below it"):
        if not any(line.startswith(must) for line in caught):
            print(f"layering_test: the checker missed a planted fault: {must}")
            return 1
    bad = check(files, cmake_text)
    for line in bad:
        print(line)
    if bad:
        return 1
    order = sorted(RANK, key=lambda x: RANK[x])
    print(f"{len(files)} files in sim/ and models/ keep to the layers (lowest first: {', '.join(order)}); "
          f"none is over {MAX_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())

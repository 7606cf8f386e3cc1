#!/usr/bin/env python3
"""The source layout the docs promise (docs/design.md, "Around the code"):

- every header in a component folder is included by that folder's or another
  component's production code: a header only tests or fuzz targets include
  belongs in testing/;
- no production source includes anything from testing/.

Production code: the .cc/.h files of the component folders, without *_test.cc
(and the test-only sources of fuzz/, bench/, tests/ are not production code).
"""
import argparse
import re
import sys
from pathlib import Path

COMPONENTS = ["common", "launcher", "rendezvous", "store", "spank_plugin", "hwloc_binding"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def production_sources(src: Path):
    for comp in COMPONENTS:
        for f in sorted((src / comp).glob("*")):
            if f.suffix in (".cc", ".h") and not f.name.endswith("_test.cc"):
                yield f


def problems_in(src: Path) -> list:
    problems = []
    prod = list(production_sources(src))
    included = {}
    for f in prod:
        for inc in INCLUDE.findall(f.read_text(errors="replace")):
            included.setdefault(inc, set()).add(f.relative_to(src).as_posix())
            if inc.startswith("testing/"):
                problems.append(f"{f.relative_to(src)}: production code includes {inc}")
    for f in prod:
        rel = f.relative_to(src).as_posix()
        if f.suffix == ".h" and not (included.get(rel, set()) - {rel}):
            problems.append(f"{rel}: no production source includes it (test-only code goes in testing/)")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, type=Path)
    a = ap.parse_args()
    problems = problems_in(a.source)
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print(f"layout: {sum(1 for _ in production_sources(a.source))} production sources, no test-only code among them")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

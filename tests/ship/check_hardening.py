#!/usr/bin/python3
"""The built files are hardened (cmake/Hardening.cmake), as hardening-check would
say: full RELRO (GNU_RELRO and BIND_NOW), PIE executables, the stack protector
(__stack_chk_fail imported) and, in executables, _FORTIFY_SOURCE (some __*_chk
function imported).

A --plugin (spank_elastic.so) is checked for RELRO and the stack protector only:
it is linked without BIND_NOW on purpose (its Slurm symbols come from the
process that loads it), and it calls no libc function that glibc checks at run
time (memcpy/memset of unknown size stay unchecked under _FORTIFY_SOURCE too),
so its fortification cannot be seen in the file; its compile flags are the same.

    check_hardening.py --exe elasticrun --exe elastic-store --plugin spank_elastic.so
"""
import argparse
import re
import subprocess
import sys


def readelf(flag, path):
    return subprocess.run(["readelf", "-W", flag, path], check=True, capture_output=True,
                          text=True).stdout


def problems(path, executable, plugin=False):
    found = []
    dynamic = readelf("-d", path)
    if "GNU_RELRO" not in readelf("-l", path):
        found.append("no GNU_RELRO segment (-z relro)")
    if not plugin and not re.search(r"\(BIND_NOW\)|\(FLAGS(_1)?\)\s+Flags:.*\bNOW\b", dynamic):
        found.append("no BIND_NOW (-z now)")
    if executable:
        if not re.search(r"Type:\s+DYN", readelf("-h", path)):
            found.append("not a position-independent executable (PIE)")
        elif not re.search(r"\(FLAGS_1\)\s+Flags:.*\bPIE\b", dynamic):
            found.append("no PIE flag in FLAGS_1 (linked without -pie)")
    symbols = readelf("--dyn-syms", path)
    if "__stack_chk_fail" not in symbols:
        found.append("no __stack_chk_fail import (-fstack-protector-strong)")
    if executable and not re.search(r"\b__\w+_chk\b", symbols.replace("__stack_chk_fail", "")):
        found.append("no fortified __*_chk import (-D_FORTIFY_SOURCE=2)")
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", action="append", default=[])
    ap.add_argument("--plugin", action="append", default=[])
    args = ap.parse_args()
    failed = False
    for path, plugin in [(p, False) for p in args.exe] + [(p, True) for p in args.plugin]:
        found = problems(path, executable=not plugin, plugin=plugin)
        print("%s: %s" % (path, "; ".join(found) if found else "hardened"))
        failed = failed or bool(found)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

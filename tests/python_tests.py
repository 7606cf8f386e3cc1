#!/usr/bin/python3
"""Python tests by discovery, and the check that no test is forgotten.

  python_tests.py list FILE
      The unittest ids (Class.method) that `python3 -m unittest` finds in FILE,
      one a line: the tests of every TestCase class defined in FILE, inherited
      methods included, classes imported from another file excluded (they
      belong to that file). CMake registers one ctest test per id at configure
      time (cmake/PythonTests.cmake).

  python_tests.py check --ctest CTEST --build DIR --source DIR
      Fails, naming each one, when a test is defined that no suite of
      scripts/suite.sh runs: a Python test (in a file named test_*.py or
      *_test.py anywhere under tests/, bench/, fuzz/ or a component's folder)
      that no ctest test with a label suite.sh selects runs, a TestCase in a
      file that unittest discovery would never load, or a C++ *_test.cc that no
      target compiles. Registered in tests/CMakeLists.txt as
      tests.every_test_is_run (label unit).

The listing imports each file as `python3 -m unittest` does (in a subprocess,
with the file's folder and tests/cluster on sys.path), so what is listed is
exactly what runs: inherited tests, load_tests and mixins included.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import os
import subprocess
import sys
import unittest
from pathlib import Path

sys.dont_write_bytecode = True
HERE = Path(__file__).resolve().parent
# Folders never searched for tests: build trees, outputs, vendored code.
SKIP_DIRS = {".git", "out", "__pycache__", "node_modules"}
TEST_FILE_PATTERNS = ("test_*.py", "*_test.py")
# What scripts/suite.sh runs (keep in step with its run_suite lines): the
# label suites (unit, process, torch, cluster) without ship.*, and ship.* by name.
SUITE_LABELS = {"unit", "process", "torch", "cluster"}
SHIP_PREFIX = "ship."


def is_test_file(path: Path) -> bool:
    return any(fnmatch.fnmatch(path.name, p) for p in TEST_FILE_PATTERNS)


def _iter_tests(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _iter_tests(t)
        else:
            yield t


def list_ids(path: Path) -> list[str]:
    """Class.method of every test defined in PATH (imports it: run in a subprocess)."""
    path = path.resolve()
    sys.path[:0] = [str(path.parent), str(HERE / "cluster")]
    module_name = path.stem
    module = __import__(module_name)
    ids = []
    for test in _iter_tests(unittest.defaultTestLoader.loadTestsFromModule(module)):
        if type(test).__module__ != module_name:
            continue  # a class imported from another test file is that file's test
        if isinstance(test, unittest.loader._FailedTest):  # type: ignore[attr-defined]
            raise SystemExit(f"{path}: {test._exception}")
        ids.append(f"{type(test).__name__}.{test._testMethodName}")
    return sorted(set(ids))


def list_ids_subprocess(path: Path) -> tuple[list[str], str]:
    """(ids, error): list_ids in a fresh interpreter, as configure does."""
    r = subprocess.run([sys.executable, "-B", str(Path(__file__).resolve()), "list", str(path)],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    if r.returncode != 0:
        return [], (r.stderr.strip().splitlines() or ["exit status %d" % r.returncode])[-1]
    return r.stdout.split(), ""


# ------------------------------------------------------------ which ctest runs what

def _prop(test: dict, name: str, default=None):
    for p in test.get("properties", []):
        if p.get("name") == name:
            return p.get("value")
    return default


def selected_by_a_suite(name: str, labels: list[str]) -> bool:
    """Whether scripts/suite.sh runs the ctest test NAME with LABELS."""
    if name.startswith(SHIP_PREFIX):
        return True
    return bool(SUITE_LABELS.intersection(labels))


def coverage(ctest_json: dict) -> tuple[dict[Path, set[str]], set[Path], list[str]]:
    """From `ctest --show-only=json-v1`: ({file: unittest names run}, {files run whole},
    [ctest tests that run Python tests but no suite selects])."""
    by_name: dict[Path, set[str]] = {}
    whole: set[Path] = set()
    unselected: list[str] = []
    for test in ctest_json.get("tests", []):
        cmd = test.get("command") or []
        cwd = Path(_prop(test, "WORKING_DIRECTORY", "") or ".")
        labels = _prop(test, "LABELS", []) or []
        runs: list[tuple[Path, str | None]] = []
        if "-m" in cmd and cmd[cmd.index("-m") + 1: cmd.index("-m") + 2] == ["unittest"]:
            for arg in cmd[cmd.index("-m") + 2:]:
                if arg.startswith("-"):
                    continue
                module, _, rest = arg.partition(".")
                runs.append(((cwd / f"{module}.py").resolve(), rest))
        else:
            for arg in cmd[1:]:
                if arg.endswith(".py") and is_test_file(Path(arg)):
                    runs.append((Path(arg).resolve(), None))
        if not runs:
            continue
        if not selected_by_a_suite(test["name"], labels):
            unselected.append(f"{test['name']} (labels {labels or 'none'})")
            continue
        for path, rest in runs:
            if rest:
                by_name.setdefault(path, set()).add(rest)
            else:
                whole.add(path)
    return by_name, whole, unselected


def uncovered(ids: list[str], names: set[str], whole: bool) -> list[str]:
    """The ids of one file that no ctest test runs (a name runs itself and what it prefixes)."""
    if whole:
        return []
    return [i for i in ids if not any(i == n or i.startswith(n + ".") for n in names)]


# ------------------------------------------------------------ the source tree

def source_files(root: Path, suffix: str):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIP_DIRS and not d.startswith(("build", ".")))
        for f in sorted(filenames):
            if f.endswith(suffix):
                yield Path(dirpath) / f


def defines_test_case(path: Path) -> bool:
    """A class with test_* methods (what a misnamed test file would hold)."""
    try:
        tree = ast.parse(path.read_text(), str(path))
    except (SyntaxError, UnicodeDecodeError):
        return False
    return any(isinstance(node, ast.ClassDef) and
               any(isinstance(f, ast.FunctionDef) and f.name.startswith("test") for f in node.body)
               for node in ast.walk(tree))


def compiled_sources(build: Path) -> set[Path]:
    db = build / "compile_commands.json"
    if not db.exists():
        return set()
    return {Path(e["directory"], e["file"]).resolve() for e in json.loads(db.read_text())}


def check(ctest: str, build: Path, source: Path) -> int:
    r = subprocess.run([ctest, "--test-dir", str(build), "--show-only=json-v1"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print(f"check: `ctest --show-only=json-v1` failed: {r.stderr.strip()}")
        return 1
    by_name, whole, unselected = coverage(json.loads(r.stdout))
    problems = [f"ctest test {t} runs Python tests but no suite of scripts/suite.sh selects it"
                for t in unselected]
    files = 0
    tests = 0
    for path in source_files(source, ".py"):
        rel = path.relative_to(source)
        if not is_test_file(path):
            if rel.parts[0] == "tests" and defines_test_case(path):
                problems.append(f"{rel}: defines test methods but is not named test_*.py or *_test.py")
            continue
        resolved = path.resolve()
        files += 1
        if resolved in whole:
            continue  # run whole: whatever it defines runs (no need to import it here)
        ids, err = list_ids_subprocess(path)
        if err:
            problems.append(f"{rel}: cannot be loaded: {err}")
            continue
        tests += len(ids)
        if not ids:
            continue
        if resolved not in by_name:
            problems.append(f"{rel}: no ctest test runs this file ({len(ids)} tests); register it "
                            "with elastic_add_python_tests() (cmake/PythonTests.cmake)")
            continue
        for i in uncovered(ids, by_name[resolved], False):
            problems.append(f"{rel}: {i} is run by no ctest test (is its file registered with elastic_add_python_tests()? configure again: cmake -S . -B {build})")
    compiled = compiled_sources(build)
    if compiled:
        for path in source_files(source, "_test.cc"):
            if path.resolve() not in compiled:
                problems.append(f"{path.relative_to(source)}: no target compiles this test file "
                                "(add it to an elastic_add_unit_tests() target)")
    for p in problems:
        print(f"not run by any suite: {p}")
    print(f"check: {files} Python test files ({len(whole)} run whole), {tests} Python tests in the others, "
          f"{len(compiled)} compiled sources; {len(problems)} problem(s)")
    return 1 if problems else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p_list = sub.add_parser("list")
    p_list.add_argument("file", type=Path)
    p_check = sub.add_parser("check")
    p_check.add_argument("--ctest", required=True)
    p_check.add_argument("--build", type=Path, required=True)
    p_check.add_argument("--source", type=Path, required=True)
    args = ap.parse_args()
    if args.cmd == "list":
        print("\n".join(list_ids(args.file)))
        return 0
    return check(args.ctest, args.build.resolve(), args.source.resolve())


if __name__ == "__main__":
    sys.exit(main())

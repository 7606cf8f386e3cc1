#!/usr/bin/python3
"""tests/python_tests.py: the listing of a file's tests and the check that no
test is run by no suite, on small trees made here (label unit)."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "python_tests.py"
sys.path.insert(0, str(HERE))
import python_tests  # noqa: E402

BASE = """
import unittest
class BaseTest(unittest.TestCase):
    def test_a(self): pass
    def test_b(self): pass
"""
DERIVED = """
import unittest
import test_base
from test_base import BaseTest
class Mixin:
    pass
class DerivedTest(Mixin, test_base.BaseTest):
    def test_c(self): pass
if __name__ == "__main__":
    unittest.main()
"""


def ctest_test(name, command, labels=("process",), cwd=None):
    props = [{"name": "LABELS", "value": list(labels)}]
    if cwd:
        props.append({"name": "WORKING_DIRECTORY", "value": str(cwd)})
    return {"name": name, "command": list(command), "properties": props}


class Tree:
    """A source tree with tests/test_base.py, tests/test_derived.py and a fake
    ctest that prints the given tests as `ctest --show-only=json-v1` does."""

    def __init__(self, tmp):
        self.root = Path(tmp) / "src"
        self.tests = self.root / "tests"
        self.tests.mkdir(parents=True)
        (self.tests / "test_base.py").write_text(BASE)
        (self.tests / "test_derived.py").write_text(DERIVED)
        self.build = Path(tmp) / "build"
        self.build.mkdir()
        self.ctest = Path(tmp) / "ctest"

    def unittest_cmd(self, *names):
        return ctest_test(names[0], ["/usr/bin/python3", "-m", "unittest", "-v", *names], cwd=self.tests)

    def check(self, tests):
        (self.build / "tests.json").write_text(json.dumps({"tests": tests}))
        self.ctest.write_text(f"#!/bin/sh\ncat {self.build / 'tests.json'}\n")
        self.ctest.chmod(0o755)
        return subprocess.run([sys.executable, "-B", str(SCRIPT), "check", "--ctest", str(self.ctest),
                               "--build", str(self.build), "--source", str(self.root)],
                              capture_output=True, text=True, timeout=120)


class ListTest(unittest.TestCase):
    def test_inherited_tests_are_the_derived_files_and_imported_classes_are_not(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree = Tree(tmp)
            r = subprocess.run([sys.executable, "-B", str(SCRIPT), "list", str(tree.tests / "test_derived.py")],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.split(), ["DerivedTest.test_a", "DerivedTest.test_b", "DerivedTest.test_c"])

    def test_a_file_that_cannot_be_imported_is_an_error_naming_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = Path(tmp) / "test_bad.py"
            bad.write_text("import no_such_module_here\n")
            ids, err = python_tests.list_ids_subprocess(bad)
            self.assertEqual(ids, [])
            self.assertIn("no_such_module_here", err)


class CoverageTest(unittest.TestCase):
    def test_table(self):
        cwd = Path("/src/tests")
        rows = [
            # (ctest test, {file: names}, whole files, unselected)
            (ctest_test("t.A.test_a", ["py", "-m", "unittest", "-v", "test_x.A.test_a"], cwd=cwd),
             {cwd / "test_x.py": {"A.test_a"}}, set(), []),
            (ctest_test("t.A", ["py", "-m", "unittest", "test_x.A"], cwd=cwd),
             {cwd / "test_x.py": {"A"}}, set(), []),
            (ctest_test("cluster.x", ["py", "/src/tests/test_x.py"], labels=["cluster"]),
             {}, {Path("/src/tests/test_x.py")}, []),
            (ctest_test("store_torch_test", ["py", "/src/tests/store_torch_test.py"], labels=["torch"]),
             {}, {Path("/src/tests/store_torch_test.py")}, []),
            (ctest_test("ship.deb", ["py", "/src/tests/test_deb.py"], labels=[]),
             {}, {Path("/src/tests/test_deb.py")}, []),
            (ctest_test("odd.A.test_a", ["py", "-m", "unittest", "test_x.A.test_a"], labels=["slow"], cwd=cwd),
             {}, set(), ["odd.A.test_a (labels ['slow'])"]),
            (ctest_test("docs", ["py", "/src/tests/check_docs.py"]), {}, set(), []),
            (ctest_test("gtest.Foo", ["/build/foo_tests", "--gtest_filter=Foo"], labels=["unit"]),
             {}, set(), []),
        ]
        for test, names, whole, unselected in rows:
            with self.subTest(test["name"]):
                self.assertEqual(python_tests.coverage({"tests": [test]}), (names, whole, unselected))

    def test_uncovered_table(self):
        ids = ["A.test_a", "A.test_b", "B.test_a"]
        rows = [
            (set(), False, ids),
            (set(), True, []),
            ({"A.test_a", "A.test_b", "B.test_a"}, False, []),
            ({"A"}, False, ["B.test_a"]),
            ({"A.test_a"}, False, ["A.test_b", "B.test_a"]),
            ({"A.test"}, False, ids),  # a prefix of a name is not a class
        ]
        for names, whole, expected in rows:
            with self.subTest(names=names, whole=whole):
                self.assertEqual(python_tests.uncovered(ids, names, whole), expected)


class CheckTest(unittest.TestCase):
    def test_every_test_registered_passes(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree = Tree(tmp)
            r = tree.check([tree.unittest_cmd("test_base.BaseTest.test_a", "test_base.BaseTest.test_b"),
                            ctest_test("d", ["py", str(tree.tests / "test_derived.py")])])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("2 Python test files (1 run whole), 2 Python tests in the others", r.stdout)

    def test_a_test_method_no_ctest_runs_fails_naming_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree = Tree(tmp)
            r = tree.check([tree.unittest_cmd("test_base.BaseTest.test_a"),
                            tree.unittest_cmd("test_derived.DerivedTest.test_a", "test_derived.DerivedTest.test_c")])
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("tests/test_base.py: BaseTest.test_b is run by no ctest test", r.stdout)
            self.assertIn("tests/test_derived.py: DerivedTest.test_b is run by no ctest test", r.stdout)
            self.assertIn("2 problem(s)", r.stdout)

    def test_a_test_file_no_ctest_runs_fails_naming_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree = Tree(tmp)
            r = tree.check([tree.unittest_cmd("test_base")])
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("tests/test_derived.py: no ctest test runs this file (3 tests)", r.stdout)

    def test_a_ctest_test_with_a_label_no_suite_selects_fails(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree = Tree(tmp)
            r = tree.check([ctest_test("b", ["py", str(tree.tests / "test_base.py")], labels=["slow"]),
                            ctest_test("d", ["py", str(tree.tests / "test_derived.py")])])
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("ctest test b (labels ['slow']) runs Python tests but no suite", r.stdout)
            self.assertIn("tests/test_base.py: no ctest test runs this file", r.stdout)

    def test_test_methods_in_a_file_unittest_would_not_load_fail(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree = Tree(tmp)
            (tree.tests / "checks.py").write_text(BASE)
            r = tree.check([tree.unittest_cmd("test_base"),
                            ctest_test("d", ["py", str(tree.tests / "test_derived.py")])])
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("tests/checks.py: defines test methods but is not named", r.stdout)

    def test_a_cxx_test_file_no_target_compiles_fails(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree = Tree(tmp)
            (tree.root / "store").mkdir()
            for name in ("store_test.cc", "lost_test.cc"):
                (tree.root / "store" / name).write_text("")
            (tree.build / "compile_commands.json").write_text(json.dumps(
                [{"directory": str(tree.build), "file": str(tree.root / "store" / "store_test.cc")}]))
            r = tree.check([tree.unittest_cmd("test_base"),
                            ctest_test("d", ["py", str(tree.tests / "test_derived.py")])])
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("store/lost_test.cc: no target compiles this test file", r.stdout)
            self.assertNotIn("store_test.cc", r.stdout)


if __name__ == "__main__":
    unittest.main()

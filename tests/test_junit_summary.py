#!/usr/bin/python3
"""scripts/junit_summary.py: CI's per-suite summary read from ctest's JUnit
report (label unit). The report below has the shape ctest 3.25 writes."""

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import junit_summary  # noqa: E402

REPORT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)" tests="7" failures="3" disabled="1" skipped="2" hostname="" time="9">
  <testcase name="unit_a" classname="unit_a" time="0.5" status="run">
    <system-out>ok
test_x (m.C.test_x) ... skipped 'needs root'
</system-out>
  </testcase>
  <testcase name="py_fail" classname="py_fail" time="12.25" status="fail">
    <failure message=""/>
    <system-out>test_y (m.C.test_y) ... FAIL
======
FAIL: test_y (m.C.test_y)
Traceback (most recent call last):
AssertionError: 1 != 2 : rank 3 missing
</system-out>
  </testcase>
  <testcase name="gtest_fail" classname="gtest_fail" time="0.1" status="fail">
    <failure message=""/>
    <system-out>[ RUN      ] T.x
store_test.cc:12: Failure
Expected equality of these values:
[  FAILED  ] T.x (0 ms)
</system-out>
  </testcase>
  <testcase name="hung" classname="hung" time="300.02" status="fail">
    <failure message=""/>
    <system-out>waiting for round 2
</system-out>
  </testcase>
  <testcase name="skipped_one" classname="skipped_one" time="0.01" status="notrun">
    <skipped message="SKIP_RETURN_CODE=77"/>
    <system-out></system-out>
  </testcase>
  <testcase name="off" classname="off" time="0" status="disabled">
    <system-out>Disabled</system-out>
  </testcase>
  <testcase name="cluster.smoke" classname="cluster.smoke" time="48.5" status="run">
    <system-out>test_up (test_smoke.T.test_up) ... [test_up: 4.5 s]
ok
[test_z: 30.0 s]
flaky: test_smoke.T.test_z failed once (AssertionError: x) and passed when run again
</system-out>
  </testcase>
</testsuite>
"""

PASSING = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite tests="1"><testcase name="a" time="1" status="run"><system-out/></testcase></testsuite>
"""


class FirstErrorLineTest(unittest.TestCase):
    def test_table(self):
        rows = [
            ("a\nFAIL: t (m.C.t)\nTraceback:\nAssertionError: 1 != 2\n", "AssertionError: 1 != 2"),
            ("ERROR: t (m.C.t)\nx\n", "ERROR: t (m.C.t)"),
            ("[ RUN ] T.x\nfoo.cc:3: Failure\nmore\n", "foo.cc:3: Failure"),
            ("starting\nsrun: error: n2: task 1: Exited\nbye\n", "srun: error: n2: task 1: Exited"),
            ("just\nlast words\n", "last words"),
            ("", "(no output)"),
        ]
        for output, expected in rows:
            with self.subTest(expected):
                self.assertEqual(junit_summary.first_error_line(output), expected)


class ReportTest(unittest.TestCase):
    def lines(self, text=REPORT, rc=8, limits=None):
        return junit_summary.report("bookworm", "process", junit_summary.parse(text), rc, limits)

    def test_summary_line_counts_passed_failed_and_skipped(self):
        lines, status = self.lines()
        self.assertEqual(lines[0], "bookworm: process: 2 passed, 3 failed, 2 skipped")
        self.assertEqual(status, 1)

    def test_each_failed_test_with_its_first_error_line(self):
        lines, _ = self.lines(limits={"hung": 300})
        self.assertIn("   FAILED py_fail (12.2 s): AssertionError: 1 != 2 : rank 3 missing", lines)
        self.assertIn("   FAILED gtest_fail (0.1 s): store_test.cc:12: Failure", lines)
        self.assertIn("   FAILED hung (300.0 s): timed out after 300 s; last words: waiting for round 2", lines)

    def test_skipped_tests_flaky_reruns_and_skips_inside_a_test(self):
        lines, _ = self.lines()
        self.assertIn("   skipped: skipped_one: SKIP_RETURN_CODE=77", lines)
        self.assertIn("   skipped: off: disabled", lines)
        self.assertIn("   skipped: test_x (m.C.test_x) ... skipped 'needs root'", lines)
        self.assertIn("   flaky: test_smoke.T.test_z failed once (AssertionError: x) and passed when run again",
                      lines)

    def test_the_five_slowest_tests_slowest_first(self):
        lines, _ = self.lines()
        slowest = [line.split()[-1] for line in lines if line.startswith("   slowest:")]
        self.assertEqual(slowest, ["hung", "cluster.smoke", "py_fail", "unit_a", "gtest_fail"])

    def test_the_slowest_scenarios_inside_a_whole_file_test(self):
        lines, _ = self.lines()
        self.assertEqual([line for line in lines if line.startswith("   slowest scenario:")],
                         ["   slowest scenario:    30.0 s cluster.smoke test_z",
                          "   slowest scenario:     4.5 s cluster.smoke test_up"])

    def test_ctest_failing_with_every_test_passed_is_a_failure(self):
        lines, status = self.lines(PASSING, rc=8)
        self.assertEqual(lines[0], "bookworm: process: 1 passed, 1 failed, 0 skipped")
        self.assertEqual(status, 1)
        lines, status = self.lines(PASSING, rc=0)
        self.assertEqual(lines[0], "bookworm: process: 1 passed, 0 failed, 0 skipped")
        self.assertEqual(status, 0)

    def test_a_missing_executable_is_a_failure_not_a_skip(self):
        text = REPORT.replace('<skipped message="SKIP_RETURN_CODE=77"/>',
                              '<skipped message="Unable to find executable"/>')
        lines, _ = self.lines(text)
        self.assertEqual(lines[0], "bookworm: process: 2 passed, 4 failed, 1 skipped")
        self.assertIn("   FAILED skipped_one (0.0 s): Unable to find executable", lines)


class ProgramTest(unittest.TestCase):
    def run_it(self, junit, rc="0"):
        return subprocess.run([sys.executable, "-B", str(ROOT / "scripts" / "junit_summary.py"),
                               "--system", "sid", "--suite", "unit", "--junit", junit, "--ctest-rc", rc],
                              capture_output=True, text=True, timeout=60)

    def test_missing_report_is_one_failed_suite(self):
        r = self.run_it("/nonexistent/unit.junit.xml", "8")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout.splitlines()[0], "sid: unit: 0 passed, 1 failed, 0 skipped")
        self.assertIn("no JUnit report from ctest", r.stdout)

    def test_passing_report_exits_0(self):
        with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
            f.write(PASSING)
            f.flush()
            r = self.run_it(f.name)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.splitlines()[0], "sid: unit: 1 passed, 0 failed, 0 skipped")

    def test_all_log_has_every_tests_output_under_its_name(self):
        with tempfile.TemporaryDirectory() as d:
            junit, log = Path(d) / "unit.junit.xml", Path(d) / "unit.all.log"
            junit.write_text(REPORT)
            r = subprocess.run([sys.executable, "-B", str(ROOT / "scripts" / "junit_summary.py"),
                                "--system", "sid", "--suite", "unit", "--junit", str(junit),
                                "--all-log", str(log)], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # the report has failures
            text = log.read_text()
        headers = [line for line in text.splitlines() if line.startswith("===== ")]
        self.assertEqual(headers, ["===== unit_a: passed (0.5 s)", "===== py_fail: failed (12.2 s)",
                                   "===== gtest_fail: failed (0.1 s)", "===== hung: failed (300.0 s)",
                                   "===== skipped_one: skipped (0.0 s)", "===== off: skipped (0.0 s)",
                                   "===== cluster.smoke: passed (48.5 s)"])
        self.assertIn("===== unit_a: passed (0.5 s)\nok\ntest_x (m.C.test_x) ... skipped 'needs root'\n"
                      "===== py_fail", text)
        self.assertIn("AssertionError: 1 != 2 : rank 3 missing\n", text)
        self.assertIn("[test_z: 30.0 s]\n", text)


if __name__ == "__main__":
    unittest.main()

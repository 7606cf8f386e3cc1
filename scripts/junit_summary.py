#!/usr/bin/python3
"""One suite's summary from ctest's JUnit file (`ctest --output-junit FILE`).

  junit_summary.py --system S --suite NAME --junit FILE [--ctest-rc N] [--build DIR]
                   [--all-log FILE]

Prints, as scripts/suite.sh shows it:
  S: NAME: P passed, F failed, K skipped          (the line scripts/test.sh adds up)
     FAILED <test> (<time> s): <its first error line>
     skipped: <test>: <why>
     <Python tests skipped inside a passing test, with unittest's reason>
     flaky: ...                                    (tests/cluster/cluster.py main's reruns)
     slowest: <time> s <test>                      (the 5 slowest tests)
     slowest scenario: <time> s <test> <scenario>  (the 5 slowest inside whole-file tests)
Exit status 1 when a test failed, the file is missing or unreadable, or ctest's
own exit status (--ctest-rc) says it failed although every test passed.
With --build, a failed test that ran up to its TIMEOUT says so.
With --all-log, every test's whole output (passed ones too, as the JUnit file
keeps it) is written to FILE, test by test (ctest's own LastTest.log holds only
the last ctest run of its tree).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

SLOWEST = 5
SCENARIO_TIME = re.compile(r"\[(test\w*): ([\d.]+) s\]")
# ctest reports these "not run" tests as skipped; any other reason (executable
# missing, a fixture's setup failed) is a failure, as in ctest's own count.
SKIP_REASONS = ("SKIP_RETURN_CODE", "SKIP_REGULAR_EXPRESSION", "Disabled")
# The line that says why a test failed, best first: unittest's verdict and the
# exception it names, GoogleTest's failure, ctest's own words, any error.
ERROR_LINES = [
    re.compile(r"^\s*\w*(Error|Exception)\b.*"),
    re.compile(r"^(FAIL|ERROR): .*"),
    re.compile(r".*: Failure$|^\[  FAILED  \].*"),
    re.compile(r".*\b(error|failed|Failed|timed out|Timeout)\b.*"),
]


@dataclass
class Case:
    name: str
    time: float
    status: str  # passed | failed | skipped
    why: str = ""
    output: str = ""


@dataclass
class Suite:
    cases: list[Case] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for c in self.cases if c.status == status)


def first_error_line(output: str) -> str:
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    for pattern in ERROR_LINES:
        for line in lines:
            if pattern.match(line):
                return line.strip()[:300]
    return (lines[-1].strip()[:300] if lines else "(no output)")


def parse(text: str) -> Suite:
    root = ET.fromstring(text)
    suite = Suite()
    for tc in root.iter("testcase"):
        output = tc.findtext("system-out") or ""
        time = float(tc.get("time") or 0)
        status = tc.get("status", "")
        skipped = tc.find("skipped")
        if status == "run" and tc.find("failure") is None and tc.find("error") is None:
            suite.cases.append(Case(tc.get("name", "?"), time, "passed", output=output))
        elif status == "disabled" or (skipped is not None and
                                      skipped.get("message", "").startswith(SKIP_REASONS)):
            why = skipped.get("message", "") if skipped is not None else "disabled"
            suite.cases.append(Case(tc.get("name", "?"), time, "skipped", why, output))
        else:
            why = skipped.get("message", "") if skipped is not None else ""
            suite.cases.append(Case(tc.get("name", "?"), time, "failed", why, output))
    return suite


def timeouts(build: str) -> dict[str, float]:
    """{test: TIMEOUT} from `ctest --show-only=json-v1` (empty if unavailable)."""
    try:
        r = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                           capture_output=True, text=True, timeout=300)
        tests = json.loads(r.stdout)["tests"]
    except (OSError, ValueError, KeyError, subprocess.SubprocessError):
        return {}
    out = {}
    for t in tests:
        for p in t.get("properties", []):
            if p.get("name") == "TIMEOUT":
                out[t["name"]] = float(p["value"])
    return out


def report(system: str, name: str, suite: Suite, ctest_rc: int,
           limits: dict[str, float] | None = None) -> tuple[list[str], int]:
    """(the lines to print, exit status)."""
    passed, failed, skipped = suite.count("passed"), suite.count("failed"), suite.count("skipped")
    unexplained = ctest_rc != 0 and failed == 0
    lines = [f"{system}: {name}: {passed} passed, {failed + unexplained} failed, {skipped} skipped"]
    if unexplained:
        lines.append(f"   ctest exited {ctest_rc} although no test failed (see the suite's log)")
    for c in suite.cases:
        if c.status == "failed":
            limit = (limits or {}).get(c.name)
            if c.why:
                why = c.why
            elif limit and c.time >= limit - 1:
                why = f"timed out after {limit:g} s; last words: {first_error_line(c.output)}"
            else:
                why = first_error_line(c.output)
            lines.append(f"   FAILED {c.name} ({c.time:.1f} s): {why}")
    for c in suite.cases:
        if c.status == "skipped":
            lines.append(f"   skipped: {c.name}: {c.why}")
    inner = set()
    for c in suite.cases:
        for line in c.output.splitlines():
            if re.search(r"\.\.\. skipped ['\"]", line):
                inner.add(f"   skipped: {line.strip()}")
            m = re.match(r"^(?:\d+: )?(flaky: .*)", line)
            if m:
                lines.append(f"   {m.group(1)}")
    lines += sorted(inner)
    for c in sorted(suite.cases, key=lambda c: -c.time)[:SLOWEST]:
        if c.time > 0:
            lines.append(f"   slowest: {c.time:7.1f} s {c.name}")
    # Inside a ctest test that runs a whole file (the cluster suites), each
    # scenario prints its own duration (tests/cluster/cluster.py ClusterTestCase).
    scenarios = [(float(m.group(2)), f"{c.name} {m.group(1)}") for c in suite.cases
                 for m in SCENARIO_TIME.finditer(c.output)]
    for t, what in sorted(scenarios, key=lambda s: -s[0])[:SLOWEST]:
        lines.append(f"   slowest scenario: {t:7.1f} s {what}")
    return lines, 1 if failed or unexplained else 0


def write_all_log(path: str, suite: Suite) -> None:
    """Every test's output, in the JUnit file's order, each under a header line."""
    with open(path, "w", encoding="utf-8", errors="replace") as f:
        for c in suite.cases:
            f.write(f"===== {c.name}: {c.status} ({c.time:.1f} s)\n")
            f.write(c.output if c.output.endswith("\n") or not c.output else c.output + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--system", required=True)
    ap.add_argument("--suite", required=True)
    ap.add_argument("--junit", required=True)
    ap.add_argument("--ctest-rc", type=int, default=0)
    ap.add_argument("--build", help="the build tree, to tell timeouts from other failures")
    ap.add_argument("--all-log", help="write every test's whole output here")
    args = ap.parse_args()
    try:
        with open(args.junit, encoding="utf-8", errors="replace") as f:
            suite = parse(f.read())
    except (OSError, ET.ParseError) as e:
        print(f"{args.system}: {args.suite}: 0 passed, 1 failed, 0 skipped")
        print(f"   no JUnit report from ctest ({args.junit}: {e}); ctest exited {args.ctest_rc}")
        return 1
    if args.all_log:
        write_all_log(args.all_log, suite)
    limits = timeouts(args.build) if args.build and suite.count("failed") else {}
    lines, status = report(args.system, args.suite, suite, args.ctest_rc, limits)
    print("\n".join(lines))
    return status


if __name__ == "__main__":
    sys.exit(main())

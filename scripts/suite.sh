#!/usr/bin/env bash
# Every suite of the test suite on the system this runs on (the host, or a root
# of the matrix entered by scripts/in-root.sh): installs what is missing, builds,
# runs unit, process, torch, cluster and ship, one summary line per suite, also
# appended to out/matrix-summary.txt. Exit status 1 if any suite failed.
# The sanitizer build (ASan+UBSan: unit and process) runs on Debian 12 only.
set -euo pipefail
cd "$(dirname "$0")/.."
system=${ELASTIC_SYSTEM:-bookworm}
mkdir -p out
summary=out/matrix-summary.txt
logdir=out/logs/$system
rm -rf "$logdir"
mkdir -p "$logdir"

bash scripts/install-deps.sh
bash scripts/build.sh release
[ "$system" != bookworm ] || bash scripts/build.sh asan

versions=$( (dpkg-query -W -f='slurm ${Version}\n' slurmd; dpkg-query -W -f='torch ${Version}\n' python3-torch;
             g++ -dumpfullversion | sed 's/^/gcc /') 2>/dev/null | tr '\n' ' ')
echo "== $system: $versions"

# Debian's python3-torch 2.x is built without libuv; its users set
# ELASTIC_TORCH_NO_LIBUV=1 (docs/user.md), and so do the tests here.
if ! /usr/bin/python3 scripts/torch_has_libuv.py; then
  export ELASTIC_TORCH_NO_LIBUV=1
  echo "== $system: this torch has no libuv: tests run with ELASTIC_TORCH_NO_LIBUV=1, as its users do"
fi

status=0
# run_suite NAME BUILD_DIR CTEST_SELECTION...: one ctest run, one summary line.
run_suite() {
  local name=$1 dir=$2
  shift 2
  local log=$logdir/$name.log rc=0
  ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" "$@" >"$log" 2>&1 || rc=$?
  # Every test's whole output, passed ones included (a flaky test's first run).
  cp "$dir/Testing/Temporary/LastTest.log" "$logdir/$name.all.log" 2>/dev/null || true
  local total failed skipped line
  line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1 || true)
  total=$(sed -n 's/.*out of \([0-9]*\).*/\1/p' <<<"$line")
  failed=$(sed -n 's/.* \([0-9]*\) tests failed.*/\1/p' <<<"$line")
  skipped=$(grep -cE '\*\*\*(Skipped|Not Run)' "$log" || true)
  if [ -z "$line" ]; then
    if grep -q 'No tests were found' "$log"; then total=0 failed=0; else total=0 failed=1; fi
  fi
  [ "$rc" -eq 0 ] || [ "${failed:-1}" -gt 0 ] || failed=1
  local passed=$((total - failed - skipped))
  line="$system: $name: $passed passed, $failed failed, $skipped skipped"
  echo "$line" | tee -a "$summary"
  if [ "$failed" -gt 0 ]; then
    status=1
    grep -E '^\s*[0-9]+ - |The following tests FAILED' "$log" | tail -n 30 || true
    # Python tests inside a failed ctest test: which ones, and their last words.
    grep -E '^(FAIL|ERROR): |^[A-Za-z.]*(Error|Exception): |^[0-9]+: (FAIL|ERROR): ' "$log" |
      cut -c1-400 | tail -n 24 | sed 's/^/   /' || true
    echo "   (whole log: $log)"
  fi
  grep -E '\*\*\*(Skipped|Not Run)' "$log" | sed 's/^/   skipped: /' || true
  # Cluster tests that failed once and passed when run again (tests/cluster/cluster.py main).
  grep -hE "^(flaky: |[0-9]+: flaky: )" "$logdir/$name.all.log" 2>/dev/null |
    sed -E 's/^([0-9]+: )?/   /' || true
  # Python tests skipped inside a passing ctest test, with unittest's reason.
  grep -hE "\.\.\. skipped ['\"]" "$logdir/$name.all.log" 2>/dev/null | sort -u |
    sed 's/^/   skipped: /' || true
}

# Suites by label; ship (packaging, the .deb on the cluster) by name.
run_suite unit build -L '^unit$' -E '^ship\.'
run_suite process build -L '^process$' -E '^ship\.'
run_suite torch build -L '^torch$' -E '^ship\.'
run_suite cluster build -L '^cluster$' -E '^ship\.'
run_suite ship build -R '^ship\.'
if [ "$system" = bookworm ]; then
  run_suite asan-unit+process build-asan -L '^(unit|process)$' -E '^ship\.packager_'
fi
echo "== $system: leftovers"
if bash tests/check_leftovers.sh; then
  echo "$system: leftovers: 1 passed, 0 failed, 0 skipped" | tee -a "$summary"
else
  echo "$system: leftovers: 0 passed, 1 failed, 0 skipped" | tee -a "$summary"
  status=1
fi
exit $status

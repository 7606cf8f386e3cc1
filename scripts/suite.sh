#!/usr/bin/env bash
# Every suite of the test suite on the system this runs on (the host, or a root
# of the matrix entered by scripts/in-root.sh): installs what is missing, builds,
# runs unit, process, torch, cluster and ship, one summary line per suite, also
# appended to out/matrix-summary.txt. Exit status 1 if any suite failed.
# The sanitizer build (ASan+UBSan: unit and process) runs on Debian 12 only, and
# there it is the process suite's only run.
set -euo pipefail
cd "$(dirname "$0")/.."
system=${ELASTIC_SYSTEM:-bookworm}
mkdir -p out
summary=out/matrix-summary.txt
logdir=out/logs/$system
rm -rf "$logdir"
mkdir -p "$logdir"

bash scripts/install-deps.sh
# Builds inside the tests (ship.packager_build_without_tests) hit ccache in a
# fresh clone too, as scripts/build.sh's builds do: paths relative to the checkout,
# -Werror not in the key (the packager's tree then hits the release tree's objects).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true CCACHE_IGNOREOPTIONS=-Werror
bash scripts/build.sh release

versions=$( (dpkg-query -W -f='slurm ${Version}\n' slurmd; dpkg-query -W -f='torch ${Version}\n' python3-torch;
             g++ -dumpfullversion | sed 's/^/gcc /') 2>/dev/null | tr '\n' ' ')
echo "== $system: $versions"

# Debian's python3-torch 2.x is built without libuv; its users set
# ELASTIC_TORCH_NO_LIBUV=1 (docs/user.md), and so do the tests here.
if ! /usr/bin/python3 scripts/torch_has_libuv.py; then
  export ELASTIC_TORCH_NO_LIBUV=1
  echo "== $system: this torch has no libuv: tests run with ELASTIC_TORCH_NO_LIBUV=1, as its users do"
fi

# Each suite runs in a network namespace of its own, with loopback only: the
# systems of the matrix run at the same time (scripts/test.sh), and a root shares
# the host's network, so two systems' tests that bind a fixed port (torchrun's
# 29500 in launcher.test_torchrun_compat) met on it: "Address already in use"
# on Debian 12 in CI. The test cluster's own namespaces are made inside it.
own_network=(unshare --net -- bash -c 'ip link set lo up && exec "$@"' own-network)

status=0
# The CPU seconds (user + system) of this shell's finished children so far, from
# bash's `times` (its second line: children's user and system time, "XmY.YYYs"),
# into the variable named $1. `times` runs in this shell (in $(...) it would report
# a subshell's, which are none).
children_cpu() {
  # A file per shell: the sanitizer suite runs in a subshell of its own at the same
  # time (one shared file once gave a suite another's figure).
  local file=$logdir/.times.$BASHPID
  times >"$file"
  printf -v "$1" '%s' "$(awk 'NR == 2 {
    n = split($0, f, " "); total = 0
    for (i = 1; i <= n; i++) { split(f[i], ms, /[ms]/); total += ms[1] * 60 + ms[2] }
    printf "%d\n", total }' "$file")"
  rm -f "$file"
}

# run_suite NAME BUILD_DIR CTEST_SELECTION...: one ctest run; its summary comes
# from ctest's JUnit report (scripts/junit_summary.py): one line per suite (also
# appended to $summary), the failed tests with their first error line, the
# skipped ones, flaky reruns, and the 5 slowest tests.
run_suite() {
  local name=$1 dir=$2
  shift 2
  local log=$logdir/$name.log junit=$PWD/$logdir/$name.junit.xml rc=0 report start=$SECONDS cpu0 cpu1
  children_cpu cpu0
  # Output kept for passed tests too (a flaky cluster test's first run, the
  # reasons of Python tests skipped inside a passing ctest test).
  "${own_network[@]}" ctest --test-dir "$dir" --output-on-failure -j "${JOBS:-$(nproc)}" --output-junit "$junit" \
    --test-output-size-passed 4194304 --test-output-size-failed 4194304 "$@" >"$log" 2>&1 || rc=$?
  # Every test's whole output, passed ones included, from the JUnit file (ctest's own
  # Testing/Temporary/LastTest.log holds only its last run's).
  report=$(/usr/bin/python3 scripts/junit_summary.py --system "$system" --suite "$name" --junit "$junit" \
             --ctest-rc "$rc" --build "$dir" --all-log "$logdir/$name.all.log") || status=1
  head -n 1 <<<"$report" >>"$summary"
  echo "$report"
  children_cpu cpu1
  echo "   took: $((SECONDS - start)) s, CPU $((cpu1 - cpu0)) s (where the matrix's time goes;" \
       "CPU: the suite's processes on every core, those reaped within it)"
  grep -q '^   FAILED\|^   no JUnit\|^   ctest exited' <<<"$report" && echo "   (whole log: $log)" || true
}

# The sanitizer tree is built and its suite run beside the release tree's suites
# (each tree has its own ctest state; its report is printed after ship's): on a
# fresh machine its build was the longest of the matrix, and Debian 12's first
# release test waited for it (73 minutes into a fresh run; issue 21); warm, its
# build is ccache's and its suite mostly waits for child processes as the
# cluster suite waits for Slurm.
asan_pid=
if [ "$system" = bookworm ]; then
  ( status=0
    if bash scripts/build.sh asan >"$logdir/asan.build.log" 2>&1; then
      # Not ship's tests: they check the package (files, hardening flags, docs), which
      # the release tree's ship suite does; under ASan they only cost time (88 s). Nor
      # the store's guard against quadratic waiters (10^6 waits on one key: 108 s and
      # 16 CPU-s under ASan, 10 s in release): it asserts the algorithm, which the
      # release suites check on every system; ASan watches the same code in the
      # store's other tests.
      run_suite asan-unit+process build-asan -L '^(unit|process)$' \
        -E '^ship\.|^StoreState\.AMillionWaitsOnOneKeyAreForgottenAndWokenInLinearTime$'
    else
      echo "$system: asan-unit+process: 0 passed, 1 failed, 0 skipped" | tee -a "$summary"
      echo "   FAILED the sanitizer tree's build: $logdir/asan.build.log"
      tail -n 30 "$logdir/asan.build.log"
      status=1
    fi
    exit $status ) >"$logdir/asan.report" 2>&1 &
  asan_pid=$!
fi
# Suites by label; ship (packaging, the .deb on the cluster) by name.
run_suite unit build -L '^unit$' -E '^ship\.'
# The process tests mostly wait (signals, timeouts, child processes): twice as
# many at once as there are cores (3.5 -> 2.6 min here, on a loaded machine).
# On Debian 12 the process suite runs in the sanitizer tree only (below): the same
# tests, with ASan and UBSan watching; the release build's agents run in the torch,
# cluster and ship suites there, and the release process suite on the other systems.
[ "$system" = bookworm ] || JOBS=$((2 * $(nproc))) run_suite process build -L '^process$' -E '^ship\.'
# On the roots the cluster suite runs beside the torch suite (its report printed after
# torch's). Its scenarios mostly wait for Slurm and their own clocks (time limits,
# training for N seconds, node losses), and since most of their workers import no
# torch (tests/light_group.py) they need little CPU: after the torch suite, they were
# the last 18-28 minutes of the run with a core mostly idle. The first try, beside unit,
# process and torch with every scenario's workers importing torch (4fef1e8, reverted),
# doubled spank.e2e's time and gained nothing: every core was busy either way. Debian 12
# keeps the serial order: its sanitizer suite already runs beside its release suites,
# and it ends before the roots. Two ctest runs share the tree: every test's output
# comes from the JUnit file (run_suite), and the unit suite before them wrote the test
# lists of gtest_discover_tests.
cluster_pid=
if [ "$system" != bookworm ]; then
  ( status=0
    run_suite cluster build -L '^cluster$' -E '^ship\.'
    exit $status ) >"$logdir/cluster.report" 2>&1 &
  cluster_pid=$!
fi
run_suite torch build -L '^torch$' -E '^ship\.'
if [ -n "$cluster_pid" ]; then
  wait "$cluster_pid" || status=1
  cat "$logdir/cluster.report"
else
  run_suite cluster build -L '^cluster$' -E '^ship\.'
fi
run_suite ship build -R '^ship\.'
if [ -n "$asan_pid" ]; then
  wait "$asan_pid" || status=1
  cat "$logdir/asan.report"
fi
echo "== $system: leftovers"
if bash tests/check_leftovers.sh; then
  echo "$system: leftovers: 1 passed, 0 failed, 0 skipped" | tee -a "$summary"
else
  echo "$system: leftovers: 0 passed, 1 failed, 0 skipped" | tee -a "$summary"
  status=1
fi
exit $status

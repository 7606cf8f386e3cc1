#!/usr/bin/env bash
# The whole test suite on every system of the test matrix, as CI runs it:
#   bookworm  Debian 12, this machine: Slurm 22.05, PyTorch 1.13, GCC 12
#             (release and ASan/UBSan builds)
#   trixie    Debian 13 root: Slurm 24.11, PyTorch 2.6, GCC 14
#   sid       Debian unstable root: Slurm 26.05, PyTorch 2.14, GCC 16
# The roots are made with mmdebstrap from Debian's archive by
# scripts/make-root.sh on first use and cached (/var/cache/slurm-elastic/roots).
# Each system runs scripts/suite.sh: one summary line per suite and system,
# repeated together at the end, then the matrix's total.
#   scripts/test.sh                     the whole matrix
#   scripts/test.sh bookworm trixie     some systems of it
set -euo pipefail
cd "$(dirname "$0")/.."
systems=("$@")
[ ${#systems[@]} -gt 0 ] || systems=(bookworm trixie sid)
for s in "${systems[@]}"; do
  case "$s" in bookworm|trixie|sid) ;; *) echo "test.sh: unknown system '$s' (bookworm, trixie, sid)" >&2; exit 2 ;; esac
done
mkdir -p out
: >out/matrix-summary.txt
bash scripts/install-deps.sh

# The systems run at the same time (their test clusters are independent: each
# root has its own /run and /tmp, and each suite runs in a network namespace
# of its own: scripts/suite.sh). On a 2-core machine the
# suites mostly wait (signals, timeouts, Slurm's own timing), so the matrix takes
# about as long as its slowest system instead of the sum of the three. Each
# system's output goes to out/logs/SYSTEM.console.log and is printed whole, in
# matrix order, when every system is done. ELASTIC_MATRIX_SERIAL=1: one system
# after the other, printed as they run.
# The roots are made first (mmdebstrap: mostly downloading and unpacking, on a
# fresh machine a few minutes each) while Debian 12 builds and tests; up-to-date
# roots cost nothing. A root that fails here is made again, in the open, by
# scripts/in-root.sh.
mkdir -p out/logs
run_system() {
  local s=$1 start rc=0
  start=$(date +%s)
  echo "===== $s"
  if [ "$s" = bookworm ]; then
    bash scripts/suite.sh || rc=1
  else
    bash scripts/in-root.sh "$s" bash scripts/suite.sh || rc=1
  fi
  echo "===== $s: $(( $(date +%s) - start )) s"
  return $rc
}

status=0
if [ "${ELASTIC_MATRIX_SERIAL:-0}" = 1 ]; then
  for s in "${systems[@]}"; do run_system "$s" || status=1; done
else
  declare -A pids=()
  start_system() {
    run_system "$1" >"out/logs/$1.console.log" 2>&1 &
    pids[$1]=$!
    echo "===== $1: started ($(date -u +%H:%M:%S))"
  }
  # Debian 12 first; every root is made before any root's suite starts: each root's
  # container tests use the other roots as images, and scripts/in-root.sh shows
  # those that exist when it starts (a root started before the next one was made
  # skipped them on a fresh machine).
  for s in "${systems[@]}"; do [ "$s" != bookworm ] || start_system "$s"; done
  for s in "${systems[@]}"; do
    [ "$s" != bookworm ] || continue
    start=$(date +%s)
    bash scripts/make-root.sh "$s" >"out/logs/make-root-$s.log" 2>&1 || true
    echo "make-root $s: $(( $(date +%s) - start )) s"
  done
  for s in "${systems[@]}"; do [ "$s" = bookworm ] || start_system "$s"; done
  for s in "${systems[@]}"; do
    rc=0
    wait "${pids[$s]}" || rc=$?
    [ "$rc" -eq 0 ] || status=1
    echo "===== $s: finished with status $rc ($(date -u +%H:%M:%S))"
  done
  for s in "${systems[@]}"; do cat "out/logs/$s.console.log"; done
fi

echo "===== the matrix"
cat out/matrix-summary.txt
grep -q . out/matrix-summary.txt || { echo "test.sh: no suite ran" >&2; status=1; }
read -r passed failed skipped < <(awk -F'[:,] *' '{for (i = 1; i <= NF; i++) {
    if ($i ~ / passed$/) p += $i; if ($i ~ / failed$/) f += $i; if ($i ~ / skipped$/) s += $i }}
  END {print p + 0, f + 0, s + 0}' out/matrix-summary.txt)
[ "$failed" -eq 0 ] || status=1
echo "matrix: $passed passed, $failed failed, $skipped skipped"
exit $status

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

# The roots of the other systems are made (mmdebstrap: mostly downloading and
# unpacking, on a fresh machine several minutes each) while Debian 12 builds
# and tests; up-to-date roots cost nothing. A root that fails here is made again,
# in the open, by scripts/in-root.sh below.
roots=()
for s in "${systems[@]}"; do [ "$s" = bookworm ] || roots+=("$s"); done
prep=
if [ ${#roots[@]} -gt 0 ] && [ "${systems[0]}" = bookworm ]; then
  mkdir -p out/logs
  ( for s in "${roots[@]}"; do
      start=$(date +%s)
      bash scripts/make-root.sh "$s" >"out/logs/make-root-$s.log" 2>&1 || true
      echo "make-root $s: $(( $(date +%s) - start )) s" >>"out/logs/make-root-$s.log"
    done ) &
  prep=$!
fi

status=0
for s in "${systems[@]}"; do
  echo "===== $s"
  start=$(date +%s)
  if [ "$s" = bookworm ]; then
    bash scripts/suite.sh || status=1
  else
    if [ -n "$prep" ]; then
      wait "$prep" || true
      prep=
      cat out/logs/make-root-*.log | grep -E '^make-root' || true
    fi
    bash scripts/in-root.sh "$s" bash scripts/suite.sh || status=1
  fi
  echo "===== $s: $(( $(date +%s) - start )) s"
done

echo "===== the matrix"
cat out/matrix-summary.txt
grep -q . out/matrix-summary.txt || { echo "test.sh: no suite ran" >&2; status=1; }
read -r passed failed skipped < <(awk -F'[:,] *' '{for (i = 1; i <= NF; i++) {
    if ($i ~ / passed$/) p += $i; if ($i ~ / failed$/) f += $i; if ($i ~ / skipped$/) s += $i }}
  END {print p + 0, f + 0, s + 0}' out/matrix-summary.txt)
[ "$failed" -eq 0 ] || status=1
echo "matrix: $passed passed, $failed failed, $skipped skipped"
exit $status

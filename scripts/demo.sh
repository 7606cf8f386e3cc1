#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs what is needed, builds,
# then runs an elastic job of examples/train.py on this machine with 4 workers,
# one of which fails once and is restarted; prints the result.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Standalone elastic run on this machine (reusable: the Slurm demo calls it too).
#   demo_standalone [BUILD_DIR]
demo_standalone() {
  local build=${1:-build}
  echo "== elasticrun --standalone --nproc-per-node=4 --max-restarts=1 examples/train.py --fail-once-rank=2"
  local rc=0
  "$build/launcher/elasticrun" --standalone --nproc-per-node=4 --max-restarts=1 \
    --python /usr/bin/python3 examples/train.py --fail-once-rank=2 || rc=$?
  if [ $rc -eq 0 ]; then
    echo "== success: rank 2 failed once on purpose, the group was restarted and the all_reduce is correct"
  else
    echo "== elasticrun failed with exit status $rc"
  fi
  return $rc
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  bash scripts/install-deps.sh
  bash scripts/build.sh release
  demo_standalone build
fi

#!/usr/bin/env bash
# The main job on a fresh Debian 12 or 13 machine, as root: installs what is needed,
# builds elasticrun and the SPANK plugin, then runs the cluster demo
# (tests/cluster/demo.sh): a real 3-node Slurm cluster in network
# namespaces on this machine (Slurm 22.05 or 24.11), `srun -N3 --no-kill --elastic=2:3` of
# examples/train.py (12 workers), one injected worker failure (every node
# restarts), one killed node (the two survivors restart with 8 workers and
# finish), the training result, and a clean teardown.
#
#   scripts/demo.sh                 the cluster demo (needs root: namespaces, daemons)
#   scripts/demo.sh --standalone    elasticrun --standalone on this machine only (no Slurm)
#
# Environment: DEMO_BUILD_DIR (default build), and tests/cluster/demo.sh's
# DEMO_STEPS, DEMO_FAIL_RANK, DEMO_KILL_NODE.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Standalone elastic run on this machine (reusable: `source scripts/demo.sh` defines it).
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

# The 3-node Slurm demo (tests/cluster/demo.sh holds the machine's cluster lock,
# waiting for it if a test has the cluster, and always tears the cluster down).
#   demo_cluster [BUILD_DIR]
demo_cluster() {
  local build=${1:-build}
  bash tests/cluster/demo.sh "$build"
}

# Only what the demo runs: elasticrun and the SPANK plugin (scripts/build.sh builds everything).
demo_build() {
  local build=$1
  cmake -S . -B "$build" >/dev/null
  cmake --build "$build" -j "$(nproc)" --target elasticrun spank_elastic
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  mode=cluster
  case "${1:-}" in
    "") ;;
    --standalone) mode=standalone ;;
    *) echo "usage: $0 [--standalone]" >&2; exit 2 ;;
  esac
  build=${DEMO_BUILD_DIR:-build}
  bash scripts/install-deps.sh
  demo_build "$build"
  # Debian's python3-torch 2.x (Debian 13, unstable) is built without libuv: do
  # what docs/user.md tells its users to do.
  if [ -z "${ELASTIC_TORCH_NO_LIBUV:-}" ] && ! /usr/bin/python3 scripts/torch_has_libuv.py; then
    echo "== this PyTorch has no libuv: running with ELASTIC_TORCH_NO_LIBUV=1 (docs/user.md)"
    export ELASTIC_TORCH_NO_LIBUV=1
  fi
  if [ "$mode" = standalone ]; then
    demo_standalone "$build"
  else
    demo_cluster "$build"
  fi
fi

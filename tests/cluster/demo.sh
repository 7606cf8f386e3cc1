#!/usr/bin/env bash
# The demo on the real 3-node test cluster:
#   srun -N3 --no-kill --elastic=2:3 --gpus-per-node=4 python3 examples/train.py
# with one injected worker failure (every node restarts its workers) and then
# one killed node (n3: every process in its namespace, kill -9) while the
# restarted workers run: the two survivors restart into world size 8 and finish.
# Prints the training result and tears the cluster down (also on failure or ^C).
#
#   tests/cluster/demo.sh [BUILD_DIR]      (default: build; needs spank_plugin/spank_elastic.so
#                                           and launcher/elasticrun in it: scripts/build.sh)
# Environment: DEMO_STEPS (training steps, default 3000: long enough to kill a
# node mid-training), DEMO_FAIL_RANK (default 5), DEMO_KILL_NODE (default n3),
# DEMO_TIMELINE (where the job's timeline picture goes, default
# /tmp/slurm-elastic-demo-timeline.svg). The job's event record
# (--elastic-events) is checked: exactly the rounds start (12 workers),
# worker_failure (12) and node_lost (8), in that order, then the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=$(realpath "${1:-build}")
SO=$BUILD/spank_plugin/spank_elastic.so
ELASTICRUN=$BUILD/launcher/elasticrun
CLUSTER=$ROOT/tests/cluster/cluster.sh
STEPS=${DEMO_STEPS:-3000}
FAIL_RANK=${DEMO_FAIL_RANK:-5}
VICTIM=${DEMO_KILL_NODE:-n3}

for f in "$SO" "$ELASTICRUN"; do
  [ -f "$f" ] || { echo "demo: $f is missing; build first (scripts/build.sh)" >&2; exit 1; }
done

# Hold the machine-wide cluster lock for the whole demo (cluster.sh alone holds
# it only while up/down run), so that no test replaces our cluster meanwhile.
LOCK=${ELASTIC_CLUSTER_LOCK:-/tmp/slurm-elastic-cluster.lock}
if [ -z "${ELASTIC_CLUSTER_LOCK_HELD:-}" ]; then
  exec 9>>"$LOCK"
  flock -n 9 || { echo "demo: waiting for the test cluster (lock $LOCK: $(cat "$LOCK.owner" 2>/dev/null))" >&2; flock -w 1800 9; }
  echo "pid $$: tests/cluster/demo.sh" >"$LOCK.owner"
  export ELASTIC_CLUSTER_LOCK_HELD=1
fi

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -n "${SRUN_PID:-}" ] && kill "$SRUN_PID" 2>/dev/null || true
  say "tearing the cluster down"
  "$CLUSTER" down
  # Informational (on a shared machine it also lists other people's processes).
  bash "$ROOT/tests/check_leftovers.sh" || true
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "starting a 3-node Slurm cluster (munge, slurmctld, 3 x slurmd in their own namespaces, 8 fake GPUs each)"
"$CLUSTER" up --nodes 3 --plugin "$SO" launcher="$ELASTICRUN"
"$CLUSTER" run sinfo -N -p main -o '%N %T %G'

# True once a worker of restart $2 runs on node $1 (read from the workers' environment).
worker_running() {
  local p
  for p in $(ip netns pids "elastic-$1" 2>/dev/null); do
    tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qx "TORCHELASTIC_RESTART_COUNT=$2" && return 0
  done
  return 1
}

LOG=$(mktemp /tmp/slurm-elastic-demo.XXXXXX.log)
EVENTS_DIR=$(mktemp -d /tmp/slurm-elastic-demo-events.XXXXXX)
chmod 0777 "$EVENTS_DIR"  # the job's user writes it
EVENTS=$EVENTS_DIR/events.jsonl
TIMELINE=${DEMO_TIMELINE:-/tmp/slurm-elastic-demo-timeline.svg}
say "srun -N3 --no-kill --elastic=2:3 --gpus-per-node=4 --elastic-max-restarts=3 --elastic-events=$EVENTS python3 examples/train.py --steps $STEPS --fail-once-rank $FAIL_RANK"
# Node names do not resolve here, not even on the node itself: elasticrun then
# sets GLOO_SOCKET_IFNAME for the workers itself (launcher/gloo_interface.cc).
"$CLUSTER" run \
  srun -N3 --no-kill --elastic=2:3 --gpus-per-node=4 --elastic-max-restarts=3 --elastic-events="$EVENTS" \
  /usr/bin/python3 "$ROOT/examples/train.py" --steps "$STEPS" --fail-once-rank "$FAIL_RANK" \
  > >(tee "$LOG") 2>&1 9>&- &
SRUN_PID=$!

# Wait until the restarted workers (after rank $FAIL_RANK's failure) run on the
# victim, then kill the node. Bounded: at most 10 minutes, 0.2 s apart.
for ((i = 0; i < 3000; i++)); do
  worker_running "$VICTIM" 1 && break
  kill -0 "$SRUN_PID" 2>/dev/null || break
  sleep 0.2
done
if worker_running "$VICTIM" 1; then
  say "worker failure handled (restart 1 running on every node); killing node $VICTIM now (kill -9 of every process in it)"
  "$CLUSTER" kill-node "$VICTIM"
else
  echo "demo: the restarted workers never ran on $VICTIM" >&2
fi

rc=0
wait "$SRUN_PID" || rc=$?
SRUN_PID=
say "result (srun exit code $rc)"
grep -E 'all_reduce|failing on purpose|rendezvous: round|lost|elasticrun: (error|warning): (node|job)' "$LOG" | sort | uniq || true
final=$(grep -cE 'rank [0-9]+/8 restart [1-9][0-9]*: all_reduce sum of ranks = 28 \(expected 28\) OK' "$LOG" || true)
# Slurm 24.11+ srun exits 1 when a node of the step failed, even with --no-kill
# (22.05: 0): that alone is the node we killed, not a failed job.
lost_only=0
if [ "$rc" -ne 0 ] && grep -q "Node failure on $VICTIM" "$LOG" && ! grep -q 'elasticrun: error' "$LOG"; then
  lost_only=1
fi
# The event record: the rounds and reasons in order with their world sizes, then the picture.
say "the job's event record ($EVENTS) and its timeline ($TIMELINE)"
record=$(python3 - "$EVENTS" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for e in events:
    print(e["time"], e["event"], e.get("reason", ""), e.get("world_size", ""), e.get("node", ""),
          e.get("failure", {}).get("cause", ""), "recovery %.1f s" % (e["recovery_ms"] / 1000) if "recovery_ms" in e else "")
print("SEQ", " ".join(e["event"] + (":" + e["reason"] + ":" + str(e.get("world_size", "")) if e["event"] in ("round", "end") else "")
                      for e in events))
PY
) || record="SEQ unreadable"
echo "$record" | grep -v '^SEQ'
want="SEQ job_start round:start:12 worker_failure round:worker_failure:12 node_lost round:node_lost:8 end:done:"
record_ok=0
if echo "$record" | grep -qx "$want"; then record_ok=1; else echo "demo: event record is not as expected: $(echo "$record" | grep '^SEQ') (want $want)" >&2; fi
"$ELASTICRUN" timeline "$EVENTS" -o "$TIMELINE" && python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$TIMELINE" \
  || record_ok=0
if [ "$final" -eq 8 ] && [ "$record_ok" -eq 1 ] && { [ "$rc" -eq 0 ] || [ "$lost_only" -eq 1 ]; }; then
  [ "$lost_only" -eq 0 ] || say "(srun's exit code $rc is Slurm's report of the node failure on $VICTIM)"
  say "OK: 12 workers, one failure restarted, node $VICTIM lost, 8 workers on 2 nodes finished the training"
else
  say "demo did not end as expected (see $LOG)"
  exit 1
fi

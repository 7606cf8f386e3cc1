#!/usr/bin/env bash
# P8: store throughput, our elastic-store vs PyTorch 1.13's own TCPStore server,
# under the same load from the same generator (bench/store/store_load, built on
# our client library), in one run, servers alternating per configuration.
#   bench/store/run.sh [BUILD_DIR]        (about 1.5 minutes)
# Each set+get configuration runs REPS times (default 3), alternating servers,
# and the summary takes the median run of each, so load from other processes
# hits both servers alike.
# Env: SECONDS_PER_RUN (default 4), REPS (default 3), FANOUT_ROUNDS (default 10),
#      OUT (results as JSON lines; default BUILD_DIR/store-bench.jsonl).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
secs=${SECONDS_PER_RUN:-4}
reps=${REPS:-3}
rounds=${FANOUT_ROUNDS:-10}
out=${OUT:-$build/store-bench.jsonl}
load=$(find "$build" -name store_load -type f -perm -u+x | head -1)
ours=$(find "$build" -name elastic-store -type f -perm -u+x | head -1)
[ -x "$load" ] && [ -x "$ours" ] || { echo "run.sh: build store_load and elastic-store in $build first" >&2; exit 2; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

wait_file() { for _ in $(seq 300); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "run.sh: no $1" >&2; exit 1; }

"$ours" --host 127.0.0.1 --port 0 --port-file "$tmp/ours" & pids+=($!)
/usr/bin/python3 - "$tmp/torch" <<'PY' & pids+=($!)
import os, sys, time
from torch.distributed import TCPStore
s = TCPStore("127.0.0.1", 0, 1, True, wait_for_workers=False)
open(sys.argv[1] + ".tmp", "w").write(str(s.port))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    time.sleep(3600)
PY
wait_file "$tmp/ours"; wait_file "$tmp/torch"
declare -A port=([ours]=$(cat "$tmp/ours") [torch]=$(cat "$tmp/torch"))

: > "$out"
for rep in $(seq "$reps"); do
  for conns in 1 8 64; do
    for server in ours torch; do
      echo "{\"server\":\"$server\",\"rep\":$rep,$("$load" setget --port "${port[$server]}" --conns "$conns" --seconds "$secs" | cut -c2-)" | tee -a "$out"
    done
  done
done
for server in ours torch; do
  echo "{\"server\":\"$server\",$("$load" fanout --port "${port[$server]}" --waiters 1000 --rounds "$rounds" | cut -c2-)" | tee -a "$out"
done

/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def get(server, mode, **kw):
    # The median run (by throughput) of this server and configuration.
    runs = [r for r in rows if r["server"] == server and r["mode"] == mode and all(r[k] == v for k, v in kw.items())]
    runs.sort(key=lambda r: r.get("pairs_per_s", 0))
    return runs[len(runs) // 2]
print()
print("| load (median of %d runs) | ours pairs/s | torch pairs/s | ratio | ours p50/p99 us | torch p50/p99 us |" % max(r.get("rep", 1) for r in rows))
print("|---|---|---|---|---|---|")
for c in (1, 8, 64):
    o, t = get("ours", "setget", conns=c), get("torch", "setget", conns=c)
    print(f"| set+get, {c} conn | {o['pairs_per_s']:.0f} | {t['pairs_per_s']:.0f} | {o['pairs_per_s']/t['pairs_per_s']:.2f}x "
          f"| {o['p50_us']:.0f} / {o['p99_us']:.0f} | {t['p50_us']:.0f} / {t['p99_us']:.0f} |")
o, t = get("ours", "fanout"), get("torch", "fanout")
print()
print("| WAIT fan-out, 1000 waiters | ours | torch | ratio |")
print("|---|---|---|---|")
print(f"| SET to last waiter woken, median ms | {o['wake_all_ms_p50']:.1f} | {t['wake_all_ms_p50']:.1f} | {t['wake_all_ms_p50']/o['wake_all_ms_p50']:.2f}x |")
print(f"| per-waiter wake p50 / p99 us | {o['waiter_p50_us']:.0f} / {o['waiter_p99_us']:.0f} | {t['waiter_p50_us']:.0f} / {t['waiter_p99_us']:.0f} | |")
PY

#!/usr/bin/env bash
# Issue 14: the store traffic of init_process_group("nccl") for N ranks
# (bench/store/init_load) against our elastic-store and PyTorch's own TCPStore
# servers, in one run: Debian 12's torch 1.13 on this host (1.13 dialect: a
# 1.13 server speaks nothing else) and Debian 13's torch 2.6 in the trixie root
# of the test matrix (scripts/in-root.sh; its non-libuv backend, the only one
# Debian builds; 2.x dialect). Each run gets a fresh server, as each round of a
# job gets a fresh store.
#   bench/store/init_run.sh [BUILD_DIR]
# Env: RANKS (default "1024 4096 16384"), CAP (seconds per run, default 120;
#      a run past it is reported as "> CAP"), PROCS (client processes, 4),
#      FANOUT (waiters of the WAIT fan-out, 16384; empty: none),
#      OUT (JSON lines; default BUILD_DIR/init-bench.jsonl).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
ranks=${RANKS:-1024 4096 16384}
cap=${CAP:-120}
procs=${PROCS:-4}
fanout=${FANOUT-16384}
out=${OUT:-$build/init-bench.jsonl}
load=$(find "$build" -name init_load -type f -perm -u+x | head -1)
ours=$(find "$build" -name elastic-store -type f -perm -u+x | head -1)
[ -x "$load" ] && [ -x "$ours" ] || { echo "init_run.sh: build init_load and elastic-store in $build first" >&2; exit 2; }
mkdir -p out  # ignored; inside the repo, which the trixie root sees at the same path
tmp=$(mktemp -d -p "$PWD/out" init-bench.XXXXXX)
server_pid=
cleanup() { stop_server; rm -rf "$tmp"; }
trap cleanup EXIT

# PyTorch's server: prints its port, serves until its stdin closes.
cat > "$tmp/torch_server.py" <<'PY'
import sys, torch
from torch.distributed import TCPStore
kw = {"use_libuv": False} if int(torch.__version__.split(".")[0]) >= 2 else {}
s = TCPStore("127.0.0.1", 0, None, True, wait_for_workers=False, **kw)
print(s.port, flush=True)
sys.stdin.read()
PY

# start_server ours|torch113|torch26: a fresh server listening on every address; sets $port.
start_server() {
  rm -f "$tmp/port" "$tmp/in"
  mkfifo "$tmp/in"
  case $1 in
    ours) "$ours" --host 0.0.0.0 --port 0 --port-file "$tmp/port" < "$tmp/in" 2>>"$tmp/server.log" & ;;
    torch113) /usr/bin/python3 "$tmp/torch_server.py" < "$tmp/in" > "$tmp/port" 2>>"$tmp/server.log" & ;;
    torch26) scripts/in-root.sh trixie python3 "$tmp/torch_server.py" < "$tmp/in" > "$tmp/port" 2>>"$tmp/server.log" & ;;
  esac
  server_pid=$!
  exec 3>"$tmp/in"  # the server's stdin: closing it ends PyTorch's
  for _ in $(seq 600); do [ -s "$tmp/port" ] && grep -q '^[0-9]' "$tmp/port" && break; sleep 0.1; done
  port=$(head -1 "$tmp/port")
  [ -n "$port" ] || { echo "init_run.sh: $1 did not start:" >&2; tail "$tmp/server.log" >&2; exit 1; }
}
stop_server() {
  [ -n "$server_pid" ] || return 0
  exec 3>&-  # PyTorch's server (and in-root.sh with it) ends; ours ignores stdin
  [ "$server" = ours ] && kill "$server_pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

# run SERVER DIALECT MODE N: one init_load run against a fresh SERVER.
run() {
  server=$1
  local dialect=$2 mode=$3 n=$4 line
  start_server "$server"
  local args=(--port "$port" --procs "$procs" --dialect "$dialect" --ranks "$n")
  [ "$mode" = fanout ] && args+=(--fanout)
  if ! line=$(timeout "$cap" "$load" "${args[@]}"); then
    line="{\"mode\":\"$mode\",\"dialect\":\"$dialect\",\"ranks\":$n,\"seconds\":null,\"error\":\"over the ${cap} s cap or failed: ${line//\"/}\"}"
  fi
  local cpu=
  # The server's CPU (user + system) for the run: ours only (PyTorch's runs
  # in python, in the trixie root for 2.6).
  [ "$server" = ours ] && cpu=$(awk '{printf ",\"server_cpu_s\":%.2f", ($14 + $15) / '"$(getconf CLK_TCK)"'}' \
    "/proc/$server_pid/stat" 2>/dev/null)
  stop_server
  echo "{\"server\":\"$server\"$cpu,${line:1}" | tee -a "$out"
}

: > "$out"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for n in $ranks; do
  run ours v2 init "$n"
  run torch26 v2 init "$n"
  run ours legacy init "$n"
  run torch113 legacy init "$n"
done
if [ -n "$fanout" ]; then
  run ours v2 fanout "$fanout"
  run torch26 v2 fanout "$fanout"
  run ours legacy fanout "$fanout"
  run torch113 legacy fanout "$fanout"
fi
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

/usr/bin/python3 - "$out" "$cap" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cap = sys.argv[2]
def secs(server, mode, n, dialect):
    return next((r["seconds"] for r in rows if r["server"] == server and r["mode"] == mode
                 and r["ranks"] == n and r["dialect"] == dialect), None)
def cell(v):
    return f"{v:.2f} s" if v is not None else f"> {cap} s"
def ratio(o, t):
    if o is None: return "-"
    return f"{t / o:.1f}x" if t is not None else f"> {float(cap) / o:.0f}x"
print()
print("| ranks | ours (2.x dialect) | torch 2.6 server | ratio | ours (1.13 dialect) | torch 1.13 server | ratio |")
print("|---|---|---|---|---|---|---|")
for mode, label in (("init", "store init, "), ("fanout", "store WAIT fan-out, ")):
    for n in sorted({r["ranks"] for r in rows if r["mode"] == mode}):
        o2, t2 = secs("ours", mode, n, "v2"), secs("torch26", mode, n, "v2")
        o1, t1 = secs("ours", mode, n, "legacy"), secs("torch113", mode, n, "legacy")
        print(f"| {label}{n:,} ranks | {cell(o2)} | {cell(t2)} | {ratio(o2, t2)} | {cell(o1)} | {cell(t1)} | {ratio(o1, t1)} |")
PY

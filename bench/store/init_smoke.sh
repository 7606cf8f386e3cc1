#!/usr/bin/env bash
# Process test: init_load plays 512 ranks' init traffic (both dialects) and a
# 512-waiter fan-out against a fresh elastic-store each; every rank must get
# through with the right replies (init_load checks the PING nonce, the unique
# id's bytes and every WAIT's answer).
#   init_smoke.sh ELASTIC_STORE INIT_LOAD
set -euo pipefail
store=$1 load=$2
tmp=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
for args in "--dialect v2" "--dialect legacy" "--dialect v2 --fanout --pause-ms 100"; do
  rm -f "$tmp/port"
  "$store" --host 0.0.0.0 --port 0 --port-file "$tmp/port" 2>>"$tmp/log" &
  pid=$!
  for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
  # shellcheck disable=SC2086
  out=$("$load" --port "$(cat "$tmp/port")" --ranks 512 --procs 2 --window 256 $args)
  echo "$out"
  grep -q '"failures":0}' <<<"$out"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
done

#!/usr/bin/env bash
# Longer fuzzing of the store (the test suite runs a short deterministic pass
# of each). Usage: store/fuzz/store_fuzz.sh [BUILD_DIR] [SECONDS] [TARGET]
# TARGET: store_parser_fuzz (the frame parser, default) or store_server_fuzz
# (the whole server over loopback connections).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
secs=${2:-300}
target=${3:-store_parser_fuzz}
case "$target" in
  store_parser_fuzz) corpus=store/fuzz/store_corpus ;;
  store_server_fuzz) corpus=store/fuzz/store_server_corpus ;;
  *) echo "unknown target $target (store_parser_fuzz or store_server_fuzz)" >&2; exit 2 ;;
esac
cmake --build "$build" --target "$target"
bin=$(find "$build" -name "$target" -type f -perm -u+x | head -1)
work=$build/$target-work
mkdir -p "$work"
exec "$bin" -max_total_time="$secs" -max_len=4096 -jobs=1 "$work" "$corpus"

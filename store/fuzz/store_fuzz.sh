#!/usr/bin/env bash
# Longer fuzzing of the store's frame parser (the test suite runs a short
# deterministic pass). Usage: store/fuzz/store_fuzz.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
secs=${2:-300}
cmake --build "$build" --target store_parser_fuzz
bin=$(find "$build" -name store_parser_fuzz -type f -perm -u+x | head -1)
work=$build/store-fuzz-work
mkdir -p "$work"
exec "$bin" -max_total_time="$secs" -max_len=4096 -jobs=1 "$work" store/fuzz/store_corpus

#!/usr/bin/env bash
# Longer libFuzzer run of the rendezvous frame parser (the test suite runs 20,000 inputs).
# Usage: bench/rendezvous/fuzz.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
build=${1:-build}
seconds=${2:-300}
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
"$build/rendezvous/rdzv_frame_fuzz" -max_total_time="$seconds" -max_len=65536 "$corpus"

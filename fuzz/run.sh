#!/usr/bin/env bash
# Runs one fuzz target (or all) for longer than the test suite does.
#   fuzz/run.sh [BUILD_DIR] [NAME|all] [SECONDS]      e.g. fuzz/run.sh build spank_options 600
# Every target of fuzz/fuzz.cmake (its list: BUILD_DIR/fuzz/targets.txt), e.g.
# parse, launch_config, store_parser, rdzv_frame. Needs a build tree configured
# with clang++ installed (the targets are built by `cmake --build`). New inputs go
# to BUILD_DIR/fuzz/work-NAME; a crash is written there as crash-*: add it to the
# target's corpus and to a unit test.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
which=${2:-all}
seconds=${3:-300}
list=$build/fuzz/targets.txt
[ -f "$list" ] || { echo "run.sh: no $list: configure $build with clang++ installed" >&2; exit 2; }
found=0
while read -r name max_len corpus; do
  case "$name" in ''|'#'*) continue ;; esac
  [ "$which" = all ] || [ "$which" = "$name" ] || continue
  found=1
  cmake --build "$build" --target "${name}_fuzz"
  mkdir -p "$build/fuzz/work-$name"
  echo "== $name: $seconds s"
  (cd "$build/fuzz" && "./${name}_fuzz" -max_total_time="$seconds" -max_len="$max_len" \
     -artifact_prefix="work-$name/" "work-$name" "$OLDPWD/$corpus")
done < "$list"
[ "$found" = 1 ] || { echo "run.sh: no fuzz target '$which' in $list" >&2; exit 2; }

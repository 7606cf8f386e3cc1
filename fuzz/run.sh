#!/usr/bin/env bash
# Runs one fuzz target (or all) for longer than the test suite does.
#   fuzz/run.sh [BUILD_DIR] [NAME|all] [SECONDS]      e.g. fuzz/run.sh build spank_options 600
# Needs a build tree configured with clang++ installed (the targets are built
# by `cmake --build`). New inputs go to BUILD_DIR/fuzz/work-NAME; a crash is
# written there as crash-*: add it to fuzz/corpus/NAME/ and to a unit test.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
which=${2:-all}
seconds=${3:-300}
names=(parse spank_options spank_task_env error_file launch_config gpu_lists)
[ "$which" = all ] || names=("$which")
for n in "${names[@]}"; do
  cmake --build "$build" --target "${n}_fuzz"
  mkdir -p "$build/fuzz/work-$n"
  echo "== $n: $seconds s"
  (cd "$build/fuzz" && "./${n}_fuzz" -max_total_time="$seconds" -max_len=2048 \
     -artifact_prefix="work-$n/" "work-$n" "$OLDPWD/fuzz/corpus/$n")
done

#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what is needed, builds the
# release and the sanitizer trees, runs every test, then checks that nothing
# (process, namespace, daemon) was left behind.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh release
bash scripts/build.sh asan

status=0
echo "== release build: all tests"
ctest --test-dir build --output-on-failure -j "$(nproc)" || status=1
echo "== ASan+UBSan build: unit and real-process tests"
ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -L 'unit|process' || status=1
echo "== leftovers"
bash tests/check_leftovers.sh || status=1
exit $status

#!/usr/bin/env bash
# Configures and builds one build tree.
#   scripts/build.sh            -> build/       (RelWithDebInfo, -Werror)
#   scripts/build.sh asan       -> build-asan/  (ASan + UBSan)
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-release}
case "$kind" in
  release) dir=build; flags=() ;;
  asan) dir=build-asan; flags=(-DELASTIC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug) ;;
  *) echo "usage: $0 [release|asan]" >&2; exit 2 ;;
esac
# ccache (scripts/install-deps.sh installs it) keyed on paths relative to the
# checkout, so a fresh clone (CI) reuses what an earlier build compiled.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
cmake -S . -B "$dir" -DELASTIC_WERROR=ON "${flags[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)"

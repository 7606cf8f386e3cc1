#!/usr/bin/env bash
# Configures and builds one build tree.
#   scripts/build.sh            -> build/       (Release, -Werror)
#   scripts/build.sh asan       -> build-asan/  (ASan + UBSan)
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-release}
case "$kind" in
  release) dir=build; flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  # -g1: line tables, all ASan's and UBSan's reports print (file:line in every
  # frame), without the types and variables of -g (the longest cold build of a
  # fresh machine's matrix; issue 21).
  asan) dir=build-asan; flags=(-DELASTIC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
                               -DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1) ;;
  *) echo "usage: $0 [release|asan]" >&2; exit 2 ;;
esac
# ccache (scripts/install-deps.sh installs it) keyed on paths relative to the
# checkout, so a fresh clone (CI) reuses what an earlier build compiled; -Werror
# left out of the key, so that the packager's build (ship.packager_build_without_tests,
# the same flags without it) reuses the release tree's objects.
# Release, not RelWithDebInfo: the packager's flags, and no debug information to
# compile and link (a fresh machine's matrix builds four trees; issue 21).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true CCACHE_IGNOREOPTIONS=-Werror
cmake -S . -B "$dir" -DELASTIC_WERROR=ON "${flags[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)"

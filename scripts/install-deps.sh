#!/usr/bin/env bash
# Installs everything slurm-elastic needs to build, test and run its demo, from
# the running Debian release's own packages (12 bookworm, 13 trixie, unstable
# sid). Idempotent: packages already present are skipped. Run as root.
#   scripts/install-deps.sh               install what is missing
#   scripts/install-deps.sh --list SUITE  print the package list of SUITE
#                                         (scripts/make-root.sh builds roots from it)
set -euo pipefail

# Every release: build, Slurm (slurmctld/slurmd/munge for the test cluster; runc
# for its OCI containers, tests/containers/test_oci.py),
# PyTorch, the tools the tests and the package check use (gdb: a hung worker's
# native frames, elasticrun --native-stacks, tested in tests/launcher; mount: the
# Apptainer stand-in's mounts, tests/containers/apptainer_standin.sh, not installed by
# default in unstable's minimal root).
COMMON=(
  build-essential cmake pkg-config git ca-certificates
  libfmt-dev libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  libhwloc-dev hwloc
  libssl-dev
  libslurm-dev slurm-wlm slurmctld slurmd slurm-client munge libmunge-dev
  runc
  libpmix-dev libpmix-bin
  iproute2 util-linux mount procps psmisc gdb
  python3 python3-torch
  dpkg-dev file ccache
  help2man lua5.1 man-db
  hyperfine
)
# Per release: the host (bookworm) also builds the sanitizer tree and the
# fuzz targets (clang) and plots the benchmarks.
packages_of() {
  case "$1" in
    bookworm) echo "${COMMON[@]}" clang libclang-rt-14-dev gnuplot-nox ;;
    trixie|sid) echo "${COMMON[@]}" ;;
    *) echo "install-deps: unknown Debian suite '$1' (bookworm, trixie or sid)" >&2; return 2 ;;
  esac
}

suite_of_this_system() {
  local codename
  codename=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release)
  # unstable and testing both call themselves by the next release's name
  # (forky, ...); a root made by make-root.sh records its suite.
  if [ -f /etc/slurm-elastic-suite ]; then cat /etc/slurm-elastic-suite; else echo "${codename:-bookworm}"; fi
}

if [ "${1:-}" = "--list" ]; then
  packages_of "${2:?usage: $0 --list SUITE}"
  exit
fi

read -r -a PACKAGES <<<"$(packages_of "$(suite_of_this_system)")"
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Debian's slurm/munge packages try to start services via invoke-rc.d; on a machine
# without an init system that fails harmlessly, and the project starts its own daemons.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

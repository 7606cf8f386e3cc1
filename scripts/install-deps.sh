#!/usr/bin/env bash
# Installs everything slurm-elastic needs to build, test and run its demo, from
# Debian 12's own packages. Idempotent: packages already present are skipped.
# Run as root (or with sudo) on Debian 12.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git ca-certificates
  libfmt-dev libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  libhwloc-dev hwloc
  libssl-dev
  libslurm-dev slurm-wlm slurmctld slurmd slurm-client munge libmunge-dev
  libpmix-dev libpmix-bin
  iproute2 util-linux procps psmisc
  python3 python3-torch
  clang libclang-rt-14-dev
  gnuplot-nox hyperfine
  dpkg-dev file ccache
  help2man lua5.1 man-db
)

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

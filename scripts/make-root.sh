#!/usr/bin/env bash
# Makes the Debian root of one system of the test matrix, or reuses it.
#   scripts/make-root.sh trixie     Debian 13 (Slurm 24.11, python3-torch 2.6, GCC 14)
#   scripts/make-root.sh sid        Debian unstable (Slurm 26.05, python3-torch 2.14, GCC 16)
# The root is built with mmdebstrap from Debian's archive, with the packages
# that scripts/install-deps.sh lists for that suite, under
# $ELASTIC_ROOTS (default /var/cache/slurm-elastic/roots)/SUITE. It is kept
# between runs; when its package list changes the missing packages are
# installed into it (built again only if that fails):
# the root's stamp is a hash of the suite, mirror and list. Prints the root's path on stdout.
# Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:?usage: $0 trixie|sid}
case "$suite" in trixie|sid) ;; *) echo "make-root: unknown suite '$suite' (trixie or sid)" >&2; exit 2 ;; esac
cache=${ELASTIC_ROOTS:-/var/cache/slurm-elastic/roots}
mirror=${ELASTIC_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$cache/$suite
packages=$(bash scripts/install-deps.sh --list "$suite")
stamp=$( (echo "$suite $mirror"; echo "$packages") | sha256sum | cut -c1-16)

if [ -f "$root/etc/slurm-elastic-root" ] && [ "$(cat "$root/etc/slurm-elastic-root")" = "$stamp" ]; then
  echo "make-root: $suite root up to date ($root)" >&2
  echo "$root"
  exit 0
fi

# The list changed (a package added): install what is missing into the root
# (apt in the root, /proc of its own, in a private mount namespace) rather than
# building it all again; a full build only when that fails.
if [ -f "$root/etc/slurm-elastic-root" ] && [ "$(cat "$root/etc/slurm-elastic-suite" 2>/dev/null)" = "$suite" ]; then
  echo "make-root: the $suite root's package list changed: installing what is missing" >&2
  # shellcheck disable=SC2016
  if unshare -m --propagation private bash -c '
      root=$1; shift
      mount -t proc proc "$root/proc"
      install() { chroot "$root" env DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin \
                    apt-get install -y -qq --no-install-recommends "$@"; }
      install "$@" || { chroot "$root" apt-get update -qq && install "$@"; }' _ "$root" $packages >&2; then
    echo "$stamp" > "$root/etc/slurm-elastic-root"
    echo "make-root: $suite root up to date ($root)" >&2
    echo "$root"
    exit 0
  fi
  echo "make-root: could not update the $suite root: building it again" >&2
fi

command -v mmdebstrap >/dev/null || {
  echo "make-root: installing mmdebstrap" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >&2 ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >&2; }
}
mkdir -p "$cache"
# A half-built root from an interrupted run is never used: build beside, then rename.
rm -rf "$root.new"
echo "make-root: building the $suite root in $root (mmdebstrap, $(echo "$packages" | wc -w) packages)" >&2
# unstable's archive may serve a Release file whose Valid-Until has passed.
mmdebstrap --variant=apt --mode=root \
  --aptopt='Acquire::Check-Valid-Until "false"' \
  --aptopt='APT::Install-Recommends "false"' \
  --include="$(echo "$packages" | tr ' ' ',')" \
  --customize-hook="echo $suite > \"\$1/etc/slurm-elastic-suite\"" \
  --customize-hook="echo $stamp > \"\$1/etc/slurm-elastic-root\"" \
  "$suite" "$root.new" "$mirror" >&2
rm -rf "$root"
mv "$root.new" "$root"
echo "make-root: $suite root ready ($root)" >&2
echo "$root"

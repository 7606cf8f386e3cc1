#!/usr/bin/env bash
# Runs a command inside the Debian root of one system of the test matrix.
#   scripts/in-root.sh trixie|sid CMD...
# The root comes from scripts/make-root.sh (built on first use, then cached).
# In a private mount namespace (nothing stays mounted afterwards) and PID
# namespace: / of the
# root is a mount point, /proc is the root's own, /sys (with /sys/fs/cgroup,
# which slurmd 24.11+ needs), /dev and /etc/hosts are the host's, /run is a fresh tmpfs,
# this repository is at the same path as on the host, the other roots are
# read-only under /var/cache/slurm-elastic/images/, and build-SUITE/ of the
# repository is mounted over build/, so every script and test finds that
# system's build tree where the host's would be. CMD runs in the repository,
# as root, with a clean environment (PATH, HOME, LANG, CI), in a PID namespace of
# its own: when it ends, any process it left is reported and killed, and two
# commands in the same root never see (or kill) each other's processes.
# The root's ccache lives outside the root and the checkout, in
# $ELASTIC_CCACHE_ROOT/SUITE (default /var/cache/slurm-elastic/ccache/SUITE),
# mounted at /var/cache/ccache with CCACHE_DIR pointing there: it survives a
# fresh clone (CI) and a root that is built again.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
suite=${1:?usage: $0 trixie|sid CMD...}
shift
[ $# -gt 0 ] || { echo "usage: $0 trixie|sid CMD..." >&2; exit 2; }
root=$(bash "$repo/scripts/make-root.sh" "$suite")
mkdir -p "$repo/build-$suite" "$repo/build"
ccache_dir=${ELASTIC_CCACHE_ROOT:-/var/cache/slurm-elastic/ccache}/$suite
if [ ! -d "$ccache_dir" ] && [ -d "$root/root/.cache/ccache" ]; then
  # Once: the cache earlier builds left inside the root (HOME=/root).
  mkdir -p "${ccache_dir%/*}" && cp -a "$root/root/.cache/ccache" "$ccache_dir.new" && mv "$ccache_dir.new" "$ccache_dir"
fi
mkdir -p "$ccache_dir"

# The inner script is an argument, not stdin: CMD keeps this script's stdin.
read -r -d '' inner <<'INNER' || true
set -euo pipefail
root=$1 repo=$2 suite=$3 ccache_dir=$4
shift 4
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o mode=0755 tmpfs "$root/run"
# The machine's own name resolves as on any installed Debian (Slurm's
# controller 24.11+ resolves srun's host name): the root sees this machine's
# /etc/hosts. (No daemon names in this script: tests/check_leftovers.sh looks
# for them in command lines, and this script is pid 1's.)
mount --bind /etc/hosts "$root/etc/hosts"
mkdir -p "$root$repo"
mount --bind "$repo" "$root$repo"
mount --bind "$repo/build-$suite" "$root$repo/build"
mkdir -p "$root/var/cache/ccache"
mount --bind "$ccache_dir" "$root/var/cache/ccache"
# The other systems' roots, read-only, as container images of another Debian
# release (tests/containers/test_oci.py): /var/cache/slurm-elastic/images/SUITE.
for other in "${root%/*}"/trixie "${root%/*}"/sid; do
  [ "$other" != "$root" ] && [ -x "$other/usr/bin/python3" ] || continue
  mkdir -p "$root/var/cache/slurm-elastic/images/${other##*/}"
  mount --bind "$other" "$root/var/cache/slurm-elastic/images/${other##*/}"
  mount -o remount,bind,ro "$root/var/cache/slurm-elastic/images/${other##*/}"
done
status=0
chroot "$root" /usr/bin/env -i \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root LANG=C.UTF-8 CI="${CI:-}" ELASTIC_SYSTEM="$suite" CCACHE_DIR=/var/cache/ccache \
  /bin/bash -c 'cd "$1" && shift && exec "$@"' in-root "$repo" "$@" || status=$?
# Everything CMD left running in this PID namespace (ours is pid 1): reported,
# killed (the kernel would kill it anyway when pid 1 exits). Other users of the
# same root, in their own namespaces, are never touched.
left=()
for p in "$root"/proc/[0-9]*; do
  pid=${p##*/}
  [ "$pid" = 1 ] || [ "$pid" = "$BASHPID" ] || left+=("$pid")
done
if [ ${#left[@]} -gt 0 ]; then
  names=$(for p in "${left[@]}"; do tr '\0' ' ' <"$root/proc/$p/cmdline" 2>/dev/null | cut -c1-60; echo -n '; '; done)
  echo "in-root: $suite: killing ${#left[@]} process(es) left in the root: $names" >&2
  kill -9 "${left[@]}" 2>/dev/null || true
  [ $status -ne 0 ] || status=1
fi
exit $status
INNER
exec unshare --mount --pid --fork --propagation private -- bash -c "$inner" in-root "$root" "$repo" "$suite" "$ccache_dir" "$@"

#!/bin/sh
# apptainer_standin.sh exec [--nv] ROOTFS CMD [ARGS...]
#
# What `apptainer exec IMAGE CMD...` does to the process it starts, for the
# containers.pyxis cluster test of `srun --elastic apptainer exec ... python
# train.py` (docs/containers.md, "Apptainer"): Debian packages neither apptainer
# nor singularity (bookworm, trixie, sid), so CI runs this stand-in instead.
# Each step, as Apptainer's user docs describe it ("Bind Paths and Mounts",
# apptainer.org/docs/user/latest/bind_paths_and_mounts.html):
#   - a new mount namespace whose root is the image (a SIF/squashfs mount there;
#     here an overlay over another Debian release's rootfs, so nothing is written
#     to it), no PID or network namespace (Apptainer's defaults): elasticrun's
#     pidfd and signals reach the program itself, which execs in place;
#   - the default binds: /dev, /proc, /sys, /tmp, /var/tmp, $HOME, the current
#     directory, /etc/hosts;
#   - the host's environment passed in unchanged (Apptainer's default without
#     --cleanenv), so the worker contract elasticrun sets reaches the program;
#   - the current directory kept; `--nv` accepted (no GPU here: it binds nothing).
# An image that does not exist fails before anything runs, as apptainer does
# (exit 255, FATAL: could not open image).
set -eu
if [ "${1:-}" != exec ]; then
  echo "apptainer-standin: usage: $0 exec [--nv] ROOTFS CMD [ARGS...]" >&2
  exit 255
fi
shift
[ "${1:-}" = --nv ] && shift
image=${1:-}
[ -n "$image" ] && shift
if [ ! -d "$image" ] || [ $# -eq 0 ]; then
  echo "FATAL:   could not open image $image: no such directory (or no command given)" >&2
  exit 255
fi
exec unshare --mount --propagation private /bin/sh -eu -c '
image=$1
shift
mount -t tmpfs apptainer-standin /mnt
mkdir /mnt/upper /mnt/work /mnt/root
mount -t overlay overlay -o "lowerdir=$image,upperdir=/mnt/upper,workdir=/mnt/work" /mnt/root
for dir in /dev /proc /sys /tmp /var/tmp "${HOME:-/root}" "$PWD"; do
  [ -d "$dir" ] || continue
  mkdir -p "/mnt/root$dir"
  mount --rbind "$dir" "/mnt/root$dir"
done
if [ -f /etc/hosts ] && [ -f /mnt/root/etc/hosts ]; then
  mount --bind /etc/hosts /mnt/root/etc/hosts
fi
exec chroot /mnt/root /bin/sh -c "cd \"\$0\" && exec \"\$@\"" "$PWD" "$@"
' apptainer-standin "$image" "$@"

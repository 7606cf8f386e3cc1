#!/bin/sh
# make_bundle.sh ELASTICRUN STUB PYTHON_DIR OUT [DLOPENED...]: the self-contained
# agent bundle (docs/containers.md): OUT/elasticrun (the static stub),
# OUT/bin/elasticrun, OUT/ld-linux-x86-64.so.2 and OUT/lib/ (the loader and every
# library elasticrun links, copied from this system, and the DLOPENED libraries
# with theirs: libcrypto.so.3, which elasticrun opens for token authentication
# and ldd cannot see; the bundle's loader finds it in OUT/lib, never the image's),
# OUT/share/slurm-elastic/python/.
set -eu
elasticrun=$1 stub=$2 python_dir=$3 out=$4
shift 4
rm -rf "$out.tmp"
mkdir -p "$out.tmp/bin" "$out.tmp/lib" "$out.tmp/share/slurm-elastic/python"
cp "$stub" "$out.tmp/elasticrun"
cp "$elasticrun" "$out.tmp/bin/elasticrun"
cp "$python_dir"/*.py "$out.tmp/share/slurm-elastic/python/"
# ldd prints "name => /path (addr)" for libraries and "/path (addr)" for the loader.
for object in "$elasticrun" "$@"; do
  case "$object" in "$elasticrun") ;; *) cp -L "$object" "$out.tmp/lib/" ;; esac
  ldd "$object"
done | while read -r first second third rest; do
  case "$first" in
    /*ld-linux*) cp -L "$first" "$out.tmp/$(basename "$first")" ;;
    *) if [ "$second" = "=>" ] && [ -n "$third" ] && [ "${third#/}" != "$third" ]; then
         cp -L "$third" "$out.tmp/lib/"
       fi ;;
  esac
done
[ -e "$out.tmp/ld-linux-x86-64.so.2" ] || { echo "make_bundle.sh: ldd named no ld-linux-x86-64.so.2 for $elasticrun" >&2; exit 1; }
rm -rf "$out"
mv "$out.tmp" "$out"

"""Worker for test_binding.py: writes what the kernel says about this worker's
binding to OUTDIR/binding.<LOCAL_RANK>.json, then exits 0."""
import ctypes
import json
import os
import platform
import sys


def status_field(name):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    return None


def mempolicy():
    """(mode, [nodes]) from get_mempolicy(2); None where the syscall number is unknown."""
    numbers = {"x86_64": 239, "aarch64": 236}
    number = numbers.get(platform.machine())
    if number is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    mode = ctypes.c_int(-1)
    mask = (ctypes.c_ulong * 16)()
    if libc.syscall(number, ctypes.byref(mode), mask, ctypes.c_ulong(16 * 64), None, ctypes.c_ulong(0)) != 0:
        return None
    nodes = [i for i in range(16 * 64) if mask[i // 64] >> (i % 64) & 1]
    return [mode.value, nodes]


def main():
    out = sys.argv[1]
    rank = os.environ["LOCAL_RANK"]
    report = {
        "cpus_allowed": status_field("Cpus_allowed_list"),
        "mems_allowed": status_field("Mems_allowed_list"),
        "affinity": sorted(os.sched_getaffinity(0)),
        "mempolicy": mempolicy(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "hwloc_xmlfile": os.environ.get("HWLOC_XMLFILE"),
    }
    tmp = os.path.join(out, "binding.%s.json.tmp" % rank)
    with open(tmp, "w") as f:
        json.dump(report, f)
    os.rename(tmp, os.path.join(out, "binding.%s.json" % rank))


if __name__ == "__main__":
    main()

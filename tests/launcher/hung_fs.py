#!/usr/bin/python3
"""A filesystem that never answers, for a worker stuck in uninterruptible sleep (D state).

Usage: hung_fs.py MOUNT STATE_DIR RELEASE_AFTER_S -- COMMAND...

In a mount namespace of its own, mounts a FUSE filesystem on MOUNT (raw /dev/fuse, stdlib
only; needs root) that answers FUSE_INIT and then reads every request and answers none,
and runs COMMAND (an elasticrun) in that namespace. A process that touches MOUNT waits for
the answer; once the request has been read, a fatal signal (SIGTERM's default action,
SIGKILL) leaves it in the kernel's uninterruptible wait (fs/fuse/dev.c,
request_wait_answer): state D, unkillable, as a process on a hung network filesystem.
STATE_DIR/held is written when the first request is held.

When COMMAND has exited (or after RELEASE_AFTER_S), the processes it left (they are
reparented here: a child subreaper) are written to STATE_DIR/left.json with their
states, then the filesystem is released (the connection closed: every held request
fails, the stuck processes die), they are reaped, and this exits with COMMAND's status
(124 if it was still running at RELEASE_AFTER_S: then it is SIGKILLed after the release).
"""
import ctypes
import json
import os
import select
import signal
import struct
import sys
import time

from launcher_test_util import proc_stats

CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 0x4000, 1 << 18
PR_SET_CHILD_SUBREAPER = 36
FUSE_INIT = 26
IN_HEADER = struct.Struct("=IIQQIIIHH")  # fuse_in_header: len opcode unique nodeid uid gid pid ...
OUT_HEADER = struct.Struct("=IiQ")        # fuse_out_header: len error unique
INIT_OUT = struct.Struct("=IIIIHHIIHHII24x")  # fuse_init_out (protocol 7.31 layout, 64 bytes)

libc = ctypes.CDLL(None, use_errno=True)


def check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def write_json(path, value):
    with open(path + ".tmp", "w") as f:
        json.dump(value, f)
    os.rename(path + ".tmp", path)


def mount_fuse(mount):
    check(libc.unshare(CLONE_NEWNS), "unshare")
    check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    opts = "fd=%d,rootmode=40000,user_id=0,group_id=0" % fd
    check(libc.mount(b"hung_fs", mount.encode(), b"fuse", MS_NOSUID | MS_NODEV, opts.encode()), "mount fuse")
    return fd


def serve_one(fd, state_dir, held):
    """Reads one request: INIT is answered, every other one held (never answered)."""
    data = os.read(fd, 1 << 20 | 4096)
    _, opcode, unique, _, _, _, pid, _, _ = IN_HEADER.unpack_from(data)
    if opcode == FUSE_INIT:
        major, minor, readahead, _ = struct.unpack_from("=IIII", data, IN_HEADER.size)
        body = INIT_OUT.pack(7, 31, readahead, 0, 0, 0, 4096, 0, 0, 0, 0, 0)
        os.write(fd, OUT_HEADER.pack(OUT_HEADER.size + len(body), 0, unique) + body)
        return held
    if not held:
        write_json(os.path.join(state_dir, "held"), {"opcode": opcode, "pid": pid})
    return True


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2]
    except OSError:
        return None


def children():
    me = os.getpid()
    return [pid for pid, state, ppid, _ in proc_stats() if ppid == me and state not in "ZX"]


def main():
    sep = sys.argv.index("--")
    mount, state_dir, release_after = sys.argv[1], sys.argv[2], float(sys.argv[3])
    command = sys.argv[sep + 1:]
    check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(PR_SET_CHILD_SUBREAPER)")
    fd = mount_fuse(mount)
    child = os.fork()
    if child == 0:
        os.close(fd)
        os.execvp(command[0], command)
    end = time.monotonic() + release_after
    held, status = False, None
    while status is None and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            held = serve_one(fd, state_dir, held)
        pid, raw = os.waitpid(child, os.WNOHANG)
        if pid == child:
            status = os.waitstatus_to_exitcode(raw)
    left = {pid: proc_state(pid) for pid in children() if pid != child}
    write_json(os.path.join(state_dir, "left.json"),
               {"command_exited": status is not None, "left": {str(p): s for p, s in left.items()}})
    os.close(fd)  # the connection ends: every held request fails, the stuck processes die
    if status is None:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        status = 124
    while True:  # what it left: dead now (killed long ago; their wait has ended)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    libc.umount2(mount.encode(), 2)  # MNT_DETACH (the namespace goes with us anyway)
    sys.exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main()

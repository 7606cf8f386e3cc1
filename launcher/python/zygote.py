"""slurm-elastic's preloaded interpreter (elasticrun --preload; docs/elasticrun.md,
"Preloading").

elasticrun starts one per node as `PYTHON -u zygote.py MODULES` with a unix stream
socket on fd 3 (ELASTIC_ZYGOTE_FD). It imports MODULES once, checks that the
import started no thread and left CUDA alone (a fork of either is unsafe), says
"ready" (or "unfit", and the agent starts workers normally), then forks one worker
per "spawn" request for as long as the agent keeps the socket open.

A worker is forked twice: the zygote forks a helper, the helper forks the worker
and exits, and the zygote reaps the helper before it replies. The agent is a
child subreaper, so by then the worker is the agent's child: the agent reaps it
and reads its exit status as if it had started it. The worker then becomes what
a normal start makes (launcher/child_process.h): its own process group,
PR_SET_PDEATHSIG(SIGKILL) once its parent is the agent, default signal
dispositions, the agent's stdout and stderr pipes, its CPU and memory binding,
its environment, working directory and argv, and runs the script (or -m module)
as __main__.

A worker ends as a normally started interpreter ends for everything of its own:
non-daemon threads joined, atexit handlers run, the modules it imported and its
__main__ dropped and collected (their objects' __del__, unclosed files flushed),
Python's and C's stdio flushed, the same exit status. The preloaded modules are
not torn down in it: tearing them down touched every object the zygote made, and
each touched page is copied (copy-on-write), which cost a torch worker more CPU
than importing torch (0.7 to 1.7 s against 0.2 s; docs/benchmarks.md, P9's CPU column).
For the same reason the zygote freezes its objects (gc.freeze, as the gc module's
documentation advises before fork) so that no collection in a worker walks them.

The wire format is in launcher/zygote_request.h; _parse_request is its only
reader on this side.
"""
import atexit
import ctypes
import gc
import os
import platform
import select
import signal
import socket
import struct
import sys
import threading

MAX_FRAME = 8 << 20  # kMaxZygoteFrame
PR_SET_PDEATHSIG = 1
SET_MEMPOLICY = {"x86_64": 238, "aarch64": 237, "ppc64le": 261}
REPARENT_WAIT_S = 10.0
_PRELOADED = set()  # the zygote's modules once ready (before any fork): never torn down in a worker


class ProtocolError(Exception):
    pass


def _encode(kind, *pairs):
    fields = [kind] + [str(x) for pair in pairs for x in pair]
    payload = b"".join(f.encode("utf-8", "surrogateescape") + b"\0" for f in fields)
    return struct.pack("<I", len(payload)) + payload


def _recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _recv_frame(sock):
    """(payload, fds) of the next frame; EOFError when the agent closed the socket."""
    fds = []
    header, anc, _, _ = sock.recvmsg(4, socket.CMSG_SPACE(2 * 4))
    if not header:
        raise EOFError
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(struct.unpack("%di" % (len(data) // 4), data[:len(data) - len(data) % 4]))
    header += _recv_exact(sock, 4 - len(header))
    (size,) = struct.unpack("<I", header)
    if size > MAX_FRAME:
        raise ProtocolError("frame of %d bytes (at most %d)" % (size, MAX_FRAME))
    return _recv_exact(sock, size), fds


def _words(text):
    return [int(w, 16) for w in text.split(",")] if text else []


def _parse_request(payload):
    """The fields of a "spawn" payload as a dict (lists for arg, env, default_signal)."""
    if not payload.endswith(b"\0"):
        raise ProtocolError("payload not NUL-terminated")
    fields = [f.decode("utf-8", "surrogateescape") for f in payload[:-1].split(b"\0")]
    if fields[0] != "spawn" or len(fields) % 2 != 1:
        raise ProtocolError("not a spawn request: %r" % fields[0][:40])
    req = {"arg": [], "env": [], "default_signal": [], "cpu_mask": [], "mem_mode": -1,
           "mem_nodes": [], "fallback_mode": -1, "fallback_nodes": [], "maxnode": 0}
    for key, value in zip(fields[1::2], fields[2::2]):
        if key in ("arg", "env"):
            req[key].append(value)
        elif key == "default_signal":
            req[key].append(int(value))
        elif key in ("script", "module", "cwd"):
            req[key] = value
        elif key in ("agent", "mem_mode", "fallback_mode", "maxnode"):
            req[key] = int(value)
        elif key in ("cpu_mask", "mem_nodes", "fallback_nodes"):
            req[key] = _words(value)
        else:
            raise ProtocolError("unknown key %r" % key[:40])
    if ("script" in req) == ("module" in req) or "cwd" not in req or req.get("agent", 0) <= 1:
        raise ProtocolError("a spawn request needs one of script/module, cwd and agent")
    return req


def _threads():
    return max(threading.active_count(), len(os.listdir("/proc/self/task")))


def _preload(modules):
    """None when fit to fork from, else why not."""
    import importlib
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException as e:  # noqa: B902 (SystemExit at import included)
            return "import %s: %s: %s" % (name, type(e).__name__, e)
    n = _threads()
    if n != 1:
        return "importing %s started %d thread(s) (fork copies only the calling one)" % (",".join(modules), n - 1)
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and getattr(cuda, "is_initialized", lambda: False)():
        return "importing %s initialised CUDA (a forked CUDA context does not work)" % ",".join(modules)
    return None


def _wait_reparented(agent):
    """Blocks until the helper that forked us has exited (pidfd: event, no polling)."""
    for _ in range(3):  # a reused pid in between: look again
        parent = os.getppid()
        if parent == agent:
            return True
        try:
            fd = os.pidfd_open(parent)
        except OSError:
            continue
        try:
            select.select([fd], [], [], REPARENT_WAIT_S)
        finally:
            os.close(fd)
    return os.getppid() == agent


def _bind(req):
    if req["cpu_mask"]:
        bits = 8 * ctypes.sizeof(ctypes.c_ulong)
        cpus = {i * bits + b for i, w in enumerate(req["cpu_mask"]) for b in range(bits) if w >> b & 1}
        try:
            os.sched_setaffinity(0, cpus)
        except OSError as e:
            _warn_binding("sched_setaffinity", e.errno)
    if req["mem_mode"] >= 0:
        nr = SET_MEMPOLICY.get(platform.machine())
        libc = ctypes.CDLL(None, use_errno=True)
        for mode, nodes in ((req["mem_mode"], req["mem_nodes"]), (req["fallback_mode"], req["fallback_nodes"])):
            if mode < 0 or nr is None:
                break
            mask = (ctypes.c_ulong * max(1, len(nodes)))(*nodes)
            if libc.syscall(nr, mode, mask, ctypes.c_ulong(req["maxnode"])) == 0:
                break
            err = ctypes.get_errno()
            if err != 22 or req["fallback_mode"] < 0 or mode == req["fallback_mode"]:  # EINVAL: try the fallback
                _warn_binding("set_mempolicy", err)
                break


def _warn_binding(call, err):
    # The same words a normal start prints (launcher/child_process.h, in_child).
    lr = os.environ.get("LOCAL_RANK", "?")
    os.write(2, ("elasticrun: warning: binding local rank %s: %s: %s\n" % (lr, call, os.strerror(err))).encode())


def _interpreter_added():
    """What the interpreter put into its environment at start (PEP 538's LC_CTYPE
    coercion): a normal start of a worker with the same locale does it too."""
    with open("/proc/self/environ", "rb") as f:
        initial = {e.split(b"=", 1)[0] for e in f.read().split(b"\0") if e}
    return {k: v for k, v in os.environ.items() if k.encode() not in initial and k != "ELASTIC_ZYGOTE_FD"}


_ADDED = {}


def _become_worker(req, sock, out_fd, err_fd):
    """In the forked worker: what child_process.cc's RunChild does before exec."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass  # the helper did it for us
    sock.close()
    if not _wait_reparented(req["agent"]):
        os._exit(128 + signal.SIGKILL)  # the agent is gone
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != req["agent"]:
        os._exit(128 + signal.SIGKILL)
    for sig in req["default_signal"]:
        # As after exec: default dispositions, then the interpreter's own SIGINT handler.
        signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    for fd in (out_fd, err_fd):
        if fd > 2:
            os.close(fd)
    env = dict(e.split("=", 1) if "=" in e else (e, "") for e in req["env"])
    for key, value in _ADDED.items():
        env.setdefault(key, value)
    os.environ.clear()
    os.environ.update(env)  # putenv: C code (torch, NCCL, CUDA) sees it too
    _bind(req)
    os.chdir(req["cwd"])


def _reapply_import_time_settings():
    """What torch read at import in the zygote and a worker may want otherwise."""
    torch = sys.modules.get("torch")
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if torch is not None and threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()  # a fresh start seeds from the OS; a fork would share the state


def _spawn(sock, req, out_fd, err_fd):
    """In the zygote: forks the helper, which forks the worker. Returns only in the worker."""
    r, w = os.pipe()
    helper = os.fork()
    if helper == 0:
        os.close(r)
        try:
            worker = os.fork()
        except OSError as e:
            os.write(w, ("error:fork: %s" % e.strerror).encode())
            os._exit(1)
        if worker == 0:
            os.close(w)
            _become_worker(req, sock, out_fd, err_fd)
            return req
        try:
            os.setpgid(worker, worker)  # both sides, as child_process.cc: signalable at once
        except OSError:
            pass
        os.write(w, str(worker).encode())
        os._exit(0)
    os.close(w)
    for fd in (out_fd, err_fd):
        os.close(fd)
    answer = b""
    while True:
        chunk = os.read(r, 256)
        if not chunk:
            break
        answer += chunk
    os.close(r)
    os.waitpid(helper, 0)  # now the worker's parent is the agent
    text = answer.decode(errors="replace")
    if text.isdigit():
        sock.sendall(_encode("spawned", ("pid", text)))
    else:
        sock.sendall(_encode("error", ("reason", text.replace("error:", "", 1) or "the fork helper died")))
    return None


def _serve(sock):
    """The request loop; returns the request in a forked worker, None when the agent is done."""
    while True:
        try:
            payload, fds = _recv_frame(sock)
        except EOFError:
            return None
        try:
            if len(fds) != 2:
                raise ProtocolError("a spawn request carries 2 descriptors, not %d" % len(fds))
            req = _parse_request(payload)
        except (ProtocolError, ValueError) as e:
            for fd in fds:
                os.close(fd)
            sock.sendall(_encode("error", ("reason", str(e))))
            continue
        job = _spawn(sock, req, fds[0], fds[1])
        if job is not None:
            return job


def _run_script(path):
    import io
    import types
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__
    main.__cached__ = None
    sys.modules["__main__"] = main
    sys.argv[0] = path
    sys.path[0] = os.path.dirname(os.path.realpath(path))
    with io.open_code(path) as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    exec(code, main.__dict__)


def _run_module(name):
    import runpy
    import types
    sys.modules["__main__"] = types.ModuleType("__main__")
    sys.path[0] = os.getcwd()
    runpy._run_module_as_main(name, alter_argv=True)


def _exit_status(e):
    """The exit status the interpreter gives for an uncaught SystemExit (and prints its text)."""
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write("%s\n" % (code,))
    except Exception:  # noqa: B902 (as the interpreter: the text is lost, the status stays)
        pass
    return 1


def _run(job):
    """Runs the worker's program; its exit status."""
    sys.argv = [job.get("script", "-m")] + job["arg"]
    # The zygote's [PYTHON, flags..., zygote.py, MODULES] with the worker's command instead.
    sys.orig_argv = sys.orig_argv[:-2] + (["-m", job["module"]] if "module" in job else [job["script"]]) + job["arg"]
    _reapply_import_time_settings()
    try:
        if "module" in job:
            _run_module(job["module"])
        else:
            _run_script(job["script"])
    except SystemExit as e:
        return _exit_status(e)
    except KeyboardInterrupt:
        raise  # the interpreter's own end: it re-raises SIGINT
    except BaseException as e:  # noqa: B902: what the interpreter does with an uncaught one
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next  # the user's frames only, as in a normal start
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        return 1
    return 0


def _flush_python_streams():
    ok = True
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # noqa: B902 (the interpreter's exit: status 120)
            ok = False
    return ok


def _clear_module_dict(d):
    """CPython's _PyModule_ClearDict: names with one leading underscore first, then the rest."""
    for first in (True, False):
        for key in list(d):
            if isinstance(key, str) and key != "__builtins__" and (
                    not first or (key.startswith("_") and not key.startswith("__"))):
                d[key] = None


def _drop_worker_modules():
    """What the interpreter's finalize_modules does, for the modules the worker
    imported and its __main__: out of sys.modules and collected, then their
    globals cleared and collected again (their objects' __del__, unclosed files)."""
    names = [n for n in sys.modules if n not in _PRELOADED or n == "__main__"]
    dicts = [getattr(sys.modules.pop(n), "__dict__", None) for n in reversed(names)]
    gc.collect()  # the worker's own objects only (the zygote's are frozen)
    for d in dicts:
        if isinstance(d, dict):
            _clear_module_dict(d)
    del dicts
    gc.collect()


def _finish(status):
    """The worker's end (see the module's docstring): the interpreter's exit steps
    for the worker's own code, then _exit without tearing the preloaded modules down."""
    try:
        threading._shutdown()  # non-daemon threads, as at the end of a normal start
    except Exception:  # noqa: B902
        pass
    atexit._run_exitfuncs()
    ok = _flush_python_streams()
    _drop_worker_modules()
    ok = _flush_python_streams() and ok
    try:
        ctypes.CDLL(None).fflush(None)  # C stdio of extensions (a pipe: fully buffered)
    except Exception:  # noqa: B902
        pass
    os._exit(status if ok else 120)


def main():
    _ADDED.update(_interpreter_added())
    sock = socket.socket(fileno=int(os.environ.pop("ELASTIC_ZYGOTE_FD", "3")))
    modules = [m for m in sys.argv[1].split(",") if m] if len(sys.argv) > 1 else []
    why = _preload(modules)
    if why is not None:
        sock.sendall(_encode("unfit", ("reason", why)))
        return
    sock.sendall(_encode("ready", ("pid", os.getpid()), ("modules", ",".join(modules))))
    _PRELOADED.update(sys.modules)
    gc.freeze()
    job = _serve(sock)
    if job is not None:
        _finish(_run(job))


if __name__ == "__main__":
    main()

"""A worker whose end shows what the interpreter's exit does: a non-daemon thread
that outlives the main code, an atexit handler, an object of the module with
__del__, a file written and never closed, C stdio without a newline (fully
buffered on a pipe), an imported module's object with __del__, and the exit status
that `argv[1]` asks for: ok, status3 (sys.exit(3)), text (sys.exit("...")), raise.
Everything goes to stdout (the agent prefixes each line with its rank); the file to
argv[2]/unclosed.RANK."""
import atexit
import ctypes
import os
import sys
import threading
import time

import ending_module  # noqa: F401 (a module the worker imports: its object's __del__ runs at exit)

mode, out = sys.argv[1], sys.argv[2]


class Noisy:
    def __del__(self):
        print("del: __main__'s object finalized", flush=True)


kept = Noisy()
log = open(os.path.join(out, "unclosed.%s" % os.environ["RANK"]), "w")
log.write("written, never closed")
atexit.register(lambda: print("atexit: ran, thread done first: %s" % done.is_set(), flush=True))
done = threading.Event()


def late():
    time.sleep(0.3)
    print("thread: finished after the main code", flush=True)
    done.set()


threading.Thread(target=late).start()
ctypes.CDLL(None).printf(b"c-stdio: before the end\n")
print("main: done", flush=True)
if mode == "status3":
    sys.exit(3)
if mode == "text":
    sys.exit("the worker's exit text")
if mode == "raise":
    raise RuntimeError("the worker's uncaught error")

"""slurm-elastic's compatibility shim for PyTorch builds without libuv.

elasticrun puts this directory first on a worker's PYTHONPATH when
ELASTIC_TORCH_NO_LIBUV=1 (docs/user.md, "PyTorch 2.x built without libuv").

PyTorch 2.x creates the workers' client of the agent's store with
TCPStore(...) and no use_libuv argument, and use_libuv defaults to True; a
build without libuv (Debian's python3-torch 2.x) then raises "use_libuv was
requested but PyTorch was build without libuv support" before it sends a
byte (torchrun's own c10d agent fails the same way). With this shim, a
TCPStore that torch.distributed.rendezvous (the workers), torchrun's c10d
backend or anything calling torch.distributed.TCPStore (torchrun 2.x's dynamic
rendezvous) creates and that fails for that reason alone is created again with
use_libuv=False: a build with libuv never takes that path, so the shim is
harmless there. It imports nothing of torch itself: it patches those modules
when the program imports them, then removes itself. Then it runs the
sitecustomize this one hides (Debian ships one), so nothing else changes.
"""
import importlib.abc
import importlib.machinery
import os
import sys

# The modules that create TCPStores on torchrun's and the workers' paths.
_TARGETS = {
    "torch.distributed",  # dist.TCPStore(...): torchrun 2.x's dynamic rendezvous store server
    "torch.distributed.rendezvous",  # workers: init_process_group(env://), agent store or not
    "torch.distributed.elastic.rendezvous.c10d_rendezvous_backend",  # torchrun's own agent
}
_HERE = os.path.dirname(os.path.abspath(__file__))


def _patch(module):
    base = getattr(module, "TCPStore", None)
    if base is None or getattr(base, "_elastic_no_libuv", False):
        return

    class TCPStore(base):
        _elastic_no_libuv = True

        def __init__(self, *args, **kwargs):
            try:
                super().__init__(*args, **kwargs)
            except RuntimeError as e:
                # Only a build without libuv raises this, before sending a byte:
                # the same store without libuv (a client speaks the same protocol).
                if "libuv" not in str(e) or kwargs.get("use_libuv") is False:
                    raise
                kwargs["use_libuv"] = False
                super().__init__(*args, **kwargs)

    TCPStore.__name__ = TCPStore.__qualname__ = base.__name__
    module.TCPStore = TCPStore


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self._inner = inner

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        _patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self):
        self._pending = set(_TARGETS)

    def find_spec(self, name, path, target=None):
        if name not in self._pending:
            return None
        self._pending.discard(name)
        if not self._pending:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def _install():
    finder = _Finder()
    for name in list(finder._pending):
        if name in sys.modules:
            _patch(sys.modules[name])
            finder._pending.discard(name)
    if finder._pending:
        sys.meta_path.insert(0, finder)


def _chain_next_sitecustomize():
    rest = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


import importlib.util  # noqa: E402  (after the definitions above, used by the chain)

_install()
_chain_next_sitecustomize()

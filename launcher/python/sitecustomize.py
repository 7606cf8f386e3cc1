"""slurm-elastic's compatibility shim for PyTorch builds without libuv.

elasticrun puts this directory first on a worker's PYTHONPATH when
ELASTIC_TORCH_NO_LIBUV=1 (docs/user.md, "PyTorch 2.x built without libuv").

PyTorch 2.x creates the workers' client of the agent's store with
TCPStore(...) and no use_libuv argument, and use_libuv defaults to True; a
build without libuv (Debian's python3-torch 2.x) then raises "use_libuv was
requested but PyTorch was build without libuv support" before it sends a
byte. This shim makes torch.distributed.rendezvous create its store clients
with use_libuv=False (a client speaks the same protocol either way). It
imports nothing of torch itself: it waits for torch.distributed.rendezvous to
be imported by the program, patches it, and removes itself. Then it runs the
sitecustomize this one hides (Debian ships one), so nothing else changes.
"""
import importlib.abc
import importlib.machinery
import os
import sys

_TARGET = "torch.distributed.rendezvous"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _patch(module):
    base = getattr(module, "TCPStore", None)
    if base is None or getattr(base, "_elastic_no_libuv", False):
        return

    class TCPStore(base):
        _elastic_no_libuv = True

        def __init__(self, *args, **kwargs):
            if not kwargs.get("is_master", len(args) > 3 and bool(args[3])):
                kwargs.setdefault("use_libuv", False)
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
    def find_spec(self, name, path, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def _install():
    if _TARGET in sys.modules:
        _patch(sys.modules[_TARGET])
    else:
        sys.meta_path.insert(0, _Finder())


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

"""Imported by ending_worker.py: an object of a module the worker imported, whose
__del__ prints when the interpreter tears the module down."""


class _Noisy:
    def __del__(self):
        print("del: ending_module's object finalized", flush=True)


_kept = _Noisy()

"""Each fit once per process (issue #51): a solve of the same law on the same points with the same settings is
made once, and every later caller, whichever command or notebook cell asks, gets a copy of it.

A solve here is a function of its arguments (the law, the points, the loss and the seed), so a stored answer is the
answer the solve would give again: numbers do not depend on what was asked before. A stored answer is copied in and
out, so no caller can change another's. :func:`clear` empties the store.

The key holds the law (its class, methods and attributes), the points and the call's settings, not the solver's
module constants (tolerances, penalties, start counts): nothing enforces that they stay fixed, so code that changes
one must call :func:`clear` (the test suite does for every test that patches). A pool worker starts with an empty
store and a Ray call empties it (:mod:`benchcast.utils.parallel`): a worker computes its own answers.
"""

from __future__ import annotations

import copy
import functools
import hashlib
from collections import OrderedDict

import numpy as np

# solves kept, the least recently used dropped first: most are parameters and flags (kilobytes), a bootstrap's
# refits about 0.1 MB per 1500 replicates, so the store stays under about 50 MB
MAX_ENTRIES = 512
_STORE: OrderedDict = OrderedDict()
_COUNTS = {"made": 0, "reused": 0}


def digest(*parts) -> str:
    """sha256 of arrays (dtype, shape and bytes), mappings (sorted by key), sequences and scalars (their repr)."""
    h = hashlib.sha256()

    def add(part) -> None:
        if isinstance(part, np.ndarray):
            h.update(f"array{part.dtype.str}{part.shape}".encode())
            h.update(np.ascontiguousarray(part).tobytes())
        elif isinstance(part, dict):
            h.update(b"{")
            for key in sorted(part):
                add(key)
                add(part[key])
            h.update(b"}")
        elif isinstance(part, (list, tuple)):
            h.update(b"(")
            for item in part:
                add(item)
            h.update(b")")
        else:
            h.update(repr(part).encode())
        h.update(b";")

    for part in parts:
        add(part)
    return h.hexdigest()


def law_key(law, *parts) -> tuple:
    """A solve's key: the law's class and every attribute it has (its methods as objects, so a class defined again in
    a notebook, or a method patched, is another key; the rest by repr), its instance attributes, and ``parts``."""
    attributes = {}
    for klass in reversed(type(law).__mro__):
        attributes.update(vars(klass))
    methods = tuple((name, value) for name, value in sorted(attributes.items()) if callable(value))
    settings = {name: repr(value) for name, value in attributes.items() if not callable(value) and name != "__dict__"}
    return (type(law), methods, digest(settings, vars(law), *parts))


def memoized(key, keep=lambda answer: True):
    """Store ``function``'s answers under ``key(*args, **kwargs)`` (a digest), copies in and out; an error raised,
    or an answer ``keep`` refuses (one holding a caught error), is not stored."""

    def decorate(function):
        name = f"{function.__module__}.{function.__qualname__}"

        @functools.wraps(function)
        def stored(*args, **kwargs):
            try:
                token = (name, key(*args, **kwargs))
            except TypeError:  # an argument that cannot be digested (an object column of lists): solved afresh
                return function(*args, **kwargs)
            if token in _STORE:
                _STORE.move_to_end(token)
                _COUNTS["reused"] += 1
                return copy.deepcopy(_STORE[token])
            answer = function(*args, **kwargs)
            _COUNTS["made"] += 1
            if not keep(answer):
                return answer
            _STORE[token] = copy.deepcopy(answer)
            while len(_STORE) > MAX_ENTRIES:
                _STORE.popitem(last=False)
            return answer

        return stored

    return decorate


def clear() -> None:
    """Forget every stored solve and the counts."""
    _STORE.clear()
    _COUNTS.update(made=0, reused=0)


def counts() -> dict[str, int]:
    """Solves made and reused in this process since the last :func:`clear`."""
    return dict(_COUNTS)

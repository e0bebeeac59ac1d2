"""The law registry: laws added by name when their module is imported, and looked up by it."""

from __future__ import annotations

from collections.abc import Callable

from benchcast.errors import BenchcastError, did_you_mean
from benchcast.laws.base import Law

_REGISTRY: dict[str, Callable[[], Law]] = {}


def register(factory: Callable[[], Law], name: str | None = None) -> Callable[[], Law]:
    """Add a law (class or zero-argument factory) to the registry under its name."""
    _REGISTRY[name or factory().name] = factory
    return factory


def get_law(name: str | Law) -> Law:
    """A fresh law object by registry name (a Law passes through).

    Parameters
    ----------
    name : str or Law
        A registered law's name, or a law object (returned as it is).

    Returns
    -------
    Law
        A new instance of the named law.
    """
    if isinstance(name, Law):
        return name
    if name not in _REGISTRY:
        raise BenchcastError(f"unknown law {name!r}." + did_you_mean(name, _REGISTRY))
    return _REGISTRY[name]()


def available_laws() -> list[str]:
    """The names of the registered laws.

    Returns
    -------
    list of str
        Every registered name, in registration order.
    """
    return list(_REGISTRY)

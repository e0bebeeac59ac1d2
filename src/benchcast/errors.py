"""Exceptions and warnings raised by benchcast.

Every error a user can cause derives from :class:`BenchcastError`; the CLI turns those into a
one-paragraph message and exit status 2. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from collections.abc import Iterable


class BenchcastError(Exception):
    """Base class of all user-facing errors."""


class DataError(BenchcastError, ValueError):
    """The input data is malformed: a file, column or value is not what was expected."""


class SelectionError(DataError):
    """A selection (benchmark, metric, k, compute range) matched nothing usable."""


class InsufficientDataError(BenchcastError, ValueError):
    """Too few points to fit the requested law."""


class ArtifactError(BenchcastError, ValueError):
    """A saved fit could not be read."""


class FitWarning(UserWarning):
    """A fit finished but its result deserves suspicion (bound, convergence, thin support)."""


class DataWarning(UserWarning):
    """The input was read, but something in it was handled in a way the user should know about (a dropped exact
    duplicate, an unknown chance level assumed 0, a re-run superseded...)."""


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """A ' Did you mean ...?' suffix listing close matches, or the available choices."""
    import difflib  # only when there is an error to explain

    choices = sorted({str(c) for c in choices})
    close = difflib.get_close_matches(str(value), choices, n=3, cutoff=0.5)
    if close:
        return " Did you mean " + " or ".join(repr(c) for c in close) + "?"
    shown = ", ".join(repr(c) for c in choices[:20])
    more = f" (and {len(choices) - 20} more)" if len(choices) > 20 else ""
    return f" Available: {shown}{more}."

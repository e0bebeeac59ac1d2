"""How refused forecasts count in a table of errors.

A refused forecast (:mod:`benchcast.forecasting.flags`: a score outside [0, 1]) has no number, so an error
(MAE, MRE) can only be taken over the forecasts that were made. That error then says nothing about the
points the law could not forecast: ``sweep --law bnsl -b sciq --tpr 20 --min-flops 3e18`` at 6e19 FLOPs
had MRE 8.97 % over 9 held-out forecasts while 24 of its 33 held-out points were refused. So every table
that shows an error shows the refusals beside it, and the one rule below decides what they cost:

* **success** (``sweep``) needs at most ``MAX_REFUSED_SHARE`` of the held-out points refused, as well as
  the MRE below its threshold: a law that refused more did not forecast that split;
* **rankings** (laws or strategies ordered by error) put every entry that refused more than
  ``MAX_REFUSED_SHARE`` of its points after every entry that did not, then order by error within each group.
"""

from __future__ import annotations

MAX_REFUSED_SHARE = 0.1  # a tenth: one refused point in ten leaves the error standing for the split


def too_many_refused(n_refused, n_total) -> bool:
    """Whether more than ``MAX_REFUSED_SHARE`` of the points were refused (no success, ranked last)."""
    n_refused, n_total = float(n_refused), float(n_total)
    return bool(n_total > 0 and n_refused / n_total > MAX_REFUSED_SHARE)


def refused_cell(n_refused, n_total) -> str:
    """A table's cell for the refusals: ``'24 of 33'`` (``'0'`` where none was refused)."""
    n_refused, n_total = int(n_refused), int(n_total)
    return f"{n_refused} of {n_total}" if n_refused else "0"


def ranked(frame, error: str, refused: str, total: str):
    """``frame`` by the rule above: rows refusing at most ``MAX_REFUSED_SHARE`` first, each group by ``error``."""
    many = [too_many_refused(r, n) for r, n in zip(frame[refused], frame[total], strict=True)]
    order = frame.assign(_many=many).sort_values(["_many", error], kind="stable", na_position="last")
    return order.drop(columns="_many")

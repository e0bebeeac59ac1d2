"""k as a control lever (Schaeffer et al. 2025): fit a per-k law at every k and collect each
parameter as a function of k."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.data.table import parse_metric, select
from benchcast.errors import BenchcastError, SelectionError
from benchcast.fitting.api import fit
from benchcast.fitting.result import FitResult
from benchcast.laws import get_law
from benchcast.utils.jsonable import jsonable
from benchcast.utils.rich_view import Markup, RichView, rich_table

# a parameter at the law's own constraint (information) and one at a search limit (a warning), as shown
BOUND_COLUMNS = {"constraint_active": "constraint active", "at_search_limit": "at search limit"}


@dataclass
class KScan(RichView):
    """A per-k law fitted separately at each k: one row per k, and the fits.

    Unpacks as ``(table, fits)``, as scipy's result objects unpack as tuples.

    Parameters
    ----------
    law : str
        The per-k law fitted.
    benchmark : str
        The benchmark scanned.
    table : pandas.DataFrame
        One row per k: ``k``, each parameter and its ``<name>_stderr``, ``n_used``, ``rmse``,
        ``r2``, ``converged``, ``constraint_active`` (the law's own constraints reached, ``E0 ≥ 0``:
        information), ``at_search_limit`` (parameters at a search limit: a warning), ``warnings`` (how
        many the fit raised); a k that could
        not be fitted has an ``error`` instead.
    fits : list of FitResult
        The fits that succeeded, in the order of ``table``.
    """

    law: str
    benchmark: str
    table: pd.DataFrame
    fits: list[FitResult] = field(default_factory=list)

    def __iter__(self):
        return iter((self.table, self.fits))

    @property
    def param_names(self) -> list[str]:
        return list(get_law(self.law).param_names)

    def trends(self) -> dict[str, float]:
        """Each parameter's change per doubling of k (see :func:`trend`).

        Returns
        -------
        dict
            Parameter name to its slope against log2 k (NaN with fewer than two fits).
        """
        return {name: trend(self.table, name) for name in self.param_names}

    def to_dict(self) -> dict:
        """law, benchmark, the scan as records and each parameter's trend per doubling of k."""
        return jsonable(
            {
                "law": self.law,
                "benchmark": self.benchmark,
                "scan": self.table.to_dict("records"),
                "trend_per_doubling": self.trends(),
                "fit_warnings": self.fit_warnings(),
                "left_out": {int(r.spec.k or 1): r.diagnostics.dropped_reasons for r in self.fits},
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per k: the parameters, points used, R², the constraints active and the search limits reached."""
        shown = {"k": "k", **{n: n for n in self.param_names}, "n_used": "points", "r2": "R2", **BOUND_COLUMNS}
        return self.table.reindex(columns=list(shown)).rename(columns=shown)

    @property
    def title(self) -> str:
        return f"{self.law} on {self.benchmark}, fitted at each k"

    def trend_line(self) -> str:
        """Each parameter's change per doubling of k, as one line (or why there is none).

        Returns
        -------
        str
        """
        known = {n: v for n, v in self.trends().items() if np.isfinite(v)}
        # a trend needs fits at two k or more: with one there is none to print, and the line says why
        if not known:
            return "change per doubling of k: not estimated (fits at fewer than two k)"
        return "change per doubling of k: " + ", ".join(f"{n} {v:+.4g}" for n, v in known.items())

    def fit_warnings(self) -> list[dict]:
        """Each distinct warning of the fits (a law of compute alone fitted across TPRs, a search limit...),
        once, with the k whose fits gave it.

        Returns
        -------
        list of dict
            ``warning`` and ``k`` (a list).
        """
        found: dict[str, list[int]] = {}
        for result in self.fits:
            for text in result.warnings:
                found.setdefault(text, []).append(int(result.spec.k or 1))
        return [{"warning": text, "k": ks} for text, ks in found.items()]

    def _warning_lines(self) -> list[str]:
        """Each warning of the fits as a line, with the k that gave it."""
        lines = []
        for w in self.fit_warnings():
            where = ", ".join(map(str, w["k"])) if len(w["k"]) < len(self.fits) else "every k"
            lines.append(f"warning (k = {where}): {w['warning']}")
        return lines

    def _dropped_lines(self) -> list[str]:
        """The rows each fit left out, counted by reason, with the k whose fits left them out alike."""
        found: dict[str, list[int]] = {}
        for result in self.fits:
            if reasons := result.diagnostics.dropped_reasons:
                text = ", ".join(f"{why}: {n}" for why, n in reasons.items())
                found.setdefault(text, []).append(int(result.spec.k or 1))
        return [f"left out (k = {', '.join(map(str, ks))}): {text}" for text, ks in found.items()]

    @property
    def notes(self) -> list[str]:
        """The trend of each parameter, the fits' warnings and left-out rows, and each k that could not be fitted."""
        errors = self.table.dropna(subset=["error"]) if "error" in self.table else self.table.iloc[0:0]
        return [
            self.trend_line(),
            *self._warning_lines(),
            *self._dropped_lines(),
            *(f"k={int(r.k)}: {r.error}" for r in errors.itertuples()),
        ]

    def require_fits(self) -> KScan:
        """This scan, when at least one k was fitted.

        Returns
        -------
        KScan
            ``self``.

        Raises
        ------
        BenchcastError
            If no k could be fitted (the message lists each k's error).
        """
        if not self.fits:
            errors = self.table.get("error", pd.Series()).tolist()
            raise BenchcastError(f"no k could be fitted for {self.benchmark}: {errors}")
        return self

    def rows(self) -> tuple[list[str], list[list]]:
        """The scan as shown: one row per k with every parameter, the points used, R2 and bounds hit.

        Returns
        -------
        tuple of (list of str, list of list)
            The column names and the rows.
        """
        frame = self.to_frame()
        return list(frame.columns), [[int(r[0]), *r[1:]] for r in frame.itertuples(index=False)]

    def rich_items(self) -> list:
        """The table of :meth:`rows`, then each parameter's change per doubling of k.

        Returns
        -------
        list
            A Rich table and a markup line.
        """
        warned = [Markup("[yellow]" + escape(line) + "[/]", highlight=False) for line in self._warning_lines()]
        left = [Markup(escape(line)) for line in self._dropped_lines()]
        return [rich_table(self.title, *self.rows()), Markup(escape(self.trend_line())), *warned, *left]

    def plot(self, ax=None):
        """Each parameter versus k, then -log pass@k versus the law's covariate with the fit at each
        k (:func:`benchcast.plots.plot_kscan`).

        Parameters
        ----------
        ax : sequence of matplotlib.axes.Axes, optional
            One panel per parameter, then the curves' panel (default: a new figure).

        Returns
        -------
        matplotlib.figure.Figure
            The figure (several panels), to restyle or save.
        """
        from benchcast.plots.figures import plot_kscan  # matplotlib loads only when a figure is drawn

        return plot_kscan(self.table, self.fits, self.param_names, ax=ax)

    def write(self, folder: str | Path, figure_format: str = "png", dpi: int | None = None) -> list[Path]:
        """Write the scan's table (CSV) and the figure of :meth:`plot` into ``folder``.

        Parameters
        ----------
        folder : str or Path
            An existing folder (e.g. the one :func:`benchcast.utils.io.output_folder` yields).
        figure_format : {'png', 'svg', 'pdf'}
            The figure's file format.
        dpi : int, optional
            Raster resolution (default :data:`benchcast.plots.options.DEFAULT_DPI`).

        Returns
        -------
        list of Path
            The files written.
        """
        from benchcast.plots.options import check_figure_options
        from benchcast.plots.style import save_figure
        from benchcast.utils.io import atomic_write_text

        figure_format, dpi = check_figure_options(figure_format, dpi)
        stem = f"kscan-{self.law}-{self.benchmark}"
        table = atomic_write_text(Path(folder) / f"{stem}.csv", self.table.to_csv(index=False))
        figure = save_figure(self.plot(), Path(folder) / f"{stem}.{figure_format}", figure_format, dpi)
        return [table, figure]


def kscan(
    table: pd.DataFrame,
    law: str,
    benchmark: str,
    ks: list[int] | None = None,
    *,
    metric: str | None = None,
    **fit_kwargs,
) -> KScan:
    """Fit ``law`` separately at each k; one row per k with every parameter and fit diagnostic.

    For metrics without k (e.g. exact_match with the gold law) the scan has the single k = 1.

    Parameters
    ----------
    table : pandas.DataFrame
        The runs, with pass@k rows (or the gold law's metric).
    law : str
        A per-k law: ``compute``, ``params_tokens`` or ``gold``.
    benchmark : str
        The benchmark to scan.
    ks : list of int, optional
        The k to fit at (default: every k in the data).
    metric : str, optional
        The metric (default: the law's).
    **fit_kwargs
        Passed to :func:`benchcast.fit` (selection and settings).

    Returns
    -------
    KScan
        The table of parameters against k and the fits; unpacks as ``(table, fits)``.
    """
    law_obj = get_law(law)
    if not law_obj.per_k:
        raise SelectionError(f"law {law!r} is not fitted per k; kscan needs compute, params_tokens or gold.")
    metric = metric or law_obj.default_metric or "pass@k"
    base, _ = parse_metric(metric)
    found = select(table, benchmark, base) if not ks and base == "pass@k" else None  # every k of its rows, else [1]
    scan = ks or (sorted(int(k) for k in found["k"].dropna().unique()) or [1] if found is not None else [None])
    rows, fits = [], []
    for k in scan:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = fit(table, law, benchmark, base, k if base == "pass@k" else None, **fit_kwargs)
        except BenchcastError as exc:
            rows.append({"k": k or 1, "error": str(exc)})
            continue
        fits.append(result)
        d = result.diagnostics
        stderr = {f"{n}_stderr": v for n, v in result.stderr.items()}
        rows.append(
            {
                "k": k or 1,
                **result.params,
                **stderr,
                "n_used": d.n_used,
                "rmse": d.rmse,
                "r2": d.r2,
                "converged": d.converged,
                **result.bounds.columns(),
                "warnings": len(caught),
            }
        )
    return KScan(law, benchmark, pd.DataFrame(rows), fits)


def trend(scan: pd.DataFrame, parameter: str) -> float:
    """Slope of a parameter against log2 k (how it moves per doubling of k)."""
    ok = scan.dropna(subset=[parameter]) if parameter in scan else scan.iloc[0:0]
    if len(ok) < 2:
        return float("nan")
    return float(np.polyfit(np.log2(ok["k"].astype(float)), ok[parameter].astype(float), 1)[0])

"""Log-axis ticks that stay readable over any span: at most a handful of labelled major ticks (powers of ten, then
1-2-5 steps, then plain steps), short labels, and minor ticks never labelled (matplotlib's labels of a span under a
decade run into each other)."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import FuncFormatter, Locator, LogLocator, MaxNLocator, NullFormatter

MAX_LABELS = 6


def _tick_label(value: float) -> str:
    """A short label: ``10^n`` for powers of ten, plain digits for ordinary numbers, else ``m×10^n``."""
    if not np.isfinite(value) or value == 0:
        return "0" if value == 0 else ""
    exponent = math.floor(math.log10(abs(value)) + 1e-9)
    mantissa = value / 10.0**exponent
    if abs(mantissa - round(mantissa)) < 1e-6 and round(mantissa) == 10:  # rounding at a decade's edge
        mantissa, exponent = 1.0, exponent + 1
    if -2 <= exponent <= 3:
        return f"{value:.3g}"
    if abs(mantissa - 1) < 1e-6:
        return f"$10^{{{exponent}}}$"
    return f"${mantissa:.2g}\\times10^{{{exponent}}}$"


class _ViewLocator(Locator):
    """A locator whose ticks are its ``tick_values`` over the axis's view."""

    def __call__(self):
        return self.tick_values(*self.axis.get_view_interval())


class ReadableLogLocator(_ViewLocator):
    """Major ticks of a log axis: at most ``max_labels`` of them, whatever the span."""

    def __init__(self, max_labels: int = MAX_LABELS):
        self.max_labels = max_labels

    def tick_values(self, vmin, vmax):
        """The major ticks between ``vmin`` and ``vmax``."""
        vmin, vmax = sorted((float(vmin), float(vmax)))
        if not (vmin > 0 and np.isfinite(vmax)):
            return np.array([])
        low, high = math.log10(vmin), math.log10(vmax)
        for stride in (1, 2, 3, 5, 10, 20, 50, 100):  # every stride-th power of ten
            first = math.ceil(low / stride - 1e-9) * stride
            powers = np.arange(first, high + 1e-9, stride)
            if 2 <= len(powers) <= self.max_labels:
                return 10.0**powers
            if len(powers) < 2:
                break
        for steps in ((1, 2, 5), (1, 2, 3, 5), (1, 1.5, 2, 3, 4, 5, 7)):  # nice values inside a few decades
            ticks = [m * 10.0**e for e in range(math.floor(low) - 1, math.ceil(high) + 1) for m in steps]
            ticks = np.array([t for t in ticks if vmin * (1 - 1e-9) <= t <= vmax * (1 + 1e-9)])
            if 2 <= len(ticks) <= self.max_labels:
                return ticks
            if len(ticks) > self.max_labels:
                return ticks[:: math.ceil(len(ticks) / self.max_labels)]
        # under a fraction of a decade: evenly spaced plain values
        return MaxNLocator(nbins=min(self.max_labels, 4), steps=[1, 2, 2.5, 5, 10]).tick_values(vmin, vmax)


def readable_log_axis(ax, axis: str = "x", base: float = 10.0) -> None:
    """Put ``ax``'s ``axis`` on a log scale whose labels never collide."""
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=base)
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_formatter(FuncFormatter(lambda x, pos=None: _tick_label(x)))
    if base == 2:
        target.set_major_locator(_PowerOfTwoLocator())
    else:
        target.set_major_locator(ReadableLogLocator())
        target.set_minor_locator(_MinorLogLocator())
    target.set_minor_formatter(NullFormatter())


class _MinorLogLocator(_ViewLocator):
    """Unlabelled ticks at 2..9 times each power of ten, over spans up to ``max_decades``."""

    def __init__(self, max_decades: float = 8.0):
        self.max_decades = max_decades
        self._inner = LogLocator(base=10.0, subs=np.arange(2, 10) * 1.0, numticks=200)

    def tick_values(self, vmin, vmax):
        """Minor ticks between ``vmin`` and ``vmax`` (none over a wide span)."""
        vmin, vmax = sorted((float(vmin), float(vmax)))
        if not vmin > 0 or np.log10(vmax / vmin) > self.max_decades:
            return np.array([])
        return self._inner.tick_values(vmin, vmax)


class _PowerOfTwoLocator(_ViewLocator):
    """Powers of two (k = 1, 2, 4, ...), every second or fourth one when there are many."""

    def tick_values(self, vmin, vmax):
        """Powers of two between ``vmin`` and ``vmax``, at most 8 of them."""
        vmin, vmax = sorted((float(vmin), float(vmax)))
        if not vmin > 0:
            return np.array([])
        powers = np.arange(math.ceil(math.log2(vmin) - 1e-9), math.log2(vmax) + 1e-9)
        stride = max(1, math.ceil(len(powers) / 8))
        return 2.0 ** powers[::stride]

"""Designs of the extrapolation-error model compared by proper scores on held-out runs (issue 30, section 2).

bench's ``fit_cells`` runs once per ladder (cached under /tmp: ``_extrapolation_cells.fitted_cells``); the
default ensemble is rebuilt per cell as bench builds it (``strategy_ensemble``); then each design widens
the same blended bootstrap draws at the held-out runs and is scored there: coverage of the 50 % and 90 %
intervals, mean 90 % width, WIS (``bench_result.weighted_interval_score``) and CRPS from the draws (both on
the log score, in percent). Designs:

* D0 the previous release: own tau, shrunk on the log scale toward the file's other benchmarks in bench only
  (measured on that release's code, 30c3c4b: its rows in the md come from there).
* D1 own tau shrunk toward the cross-ladder prior (computed leaving the ladder's whole file out); normal.
* D2 D1 + drift (per-origin slopes, their mean shrunk toward the prior's drift).
* D3 D2 + Student t tails, df = max(own origins, 2) + 1.
* D4 D3 also shrunk toward the file's other benchmarks (leave one out).
* D5 D1 also shrunk toward the file's other benchmarks: the issue's pooling rule (own, benchmarks, prior)
  without drift or tails (added after D2-D4 showed the inner drift does not carry forward); D6 D5 + t tails.

    python benchmarks/extrapolation_designs.py [--n-boot 50] [--write]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _extrapolation_cells as xc  # noqa: E402

from benchcast.errors import InsufficientDataError  # noqa: E402
from benchcast.evaluation.bench_result import SCORE_FLOOR, weighted_interval_score  # noqa: E402
from benchcast.evaluation.scores import crps_draws  # noqa: E402
from benchcast.forecasting.draws import ScoreDraws, score_interval  # noqa: E402
from benchcast.forecasting.extrapolation import load_prior, widen  # noqa: E402

# D0 (the previous release's rule, forecasting.tau_pooling) was measured on that release's code (30c3c4b); its
# rows in extrapolation_designs.md come from there, and `coverage_by_benchmark.py --src` measures it end to end
DESIGNS = ("D1", "D2", "D3", "D4", "D5", "D6")
SETTINGS = {  # estimate()'s keywords per design
    "D1": {"drift": False, "tails": False, "bench_origins": 0.0},
    "D2": {"drift": True, "tails": False, "bench_origins": 0.0},
    "D3": {"drift": True, "tails": True, "bench_origins": 0.0},
    "D4": {"drift": True, "tails": True},
    "D5": {"drift": False, "tails": False},
    "D6": {"drift": False, "tails": True},
}
OUT = Path(__file__).with_suffix(".md")


def _score(cell, draws) -> dict:
    sample = ScoreDraws(draws)
    intervals = {level: score_interval(sample, level) for level in (0.5, 0.9)}
    y = cell.true
    inside = {lv: (y >= lo) & (y <= hi) for lv, (lo, hi) in intervals.items()}
    logs = np.log(np.maximum(draws, SCORE_FLOOR))
    return {
        "cov50": float(np.mean(inside[0.5])),
        "cov90": float(np.mean(inside[0.9])),
        "width90": float(np.mean(intervals[0.9][1] - intervals[0.9][0])),
        "wis": float(np.mean(weighted_interval_score(y, cell.predicted, intervals))),
        "crps": float(np.mean(100 * crps_draws(logs, np.log(np.maximum(y, SCORE_FLOOR))))),
    }


def run_ladder(name: str, summaries: dict, n_boot: int, seed: int = 0, strategy: str = "ensemble") -> pd.DataFrame:
    """Every design's scores per benchmark of one ladder."""
    cells = xc.cells(xc.fitted_cells(name, n_boot), strategy)
    ok = [c for c in cells if c.status == "ok" and c.boot is not None]
    loo = load_prior(exclude=[k for k, f in xc.FILE_OF.items() if f == xc.FILE_OF[name]], ladders=summaries)
    own = {d: xc.own_models(ok, **{k: v for k, v in SETTINGS[d].items() if k != "bench_origins"}) for d in SETTINGS}
    records = []
    for cell in ok:
        keep = np.isfinite(cell.boot).all(axis=0) & np.isfinite(cell.predicted)  # as Ensemble.predict takes them
        for design in DESIGNS:
            row = {"ladder": name, "benchmark": cell.label, "design": design, "n": int(keep.sum())}
            others = [m for b, m in own[design].items() if b != cell.label]
            try:
                model = xc.estimate_design(xc.with_tpr(cell), loo, others, **SETTINGS[design])
            except InsufficientDataError:
                records.append({**row, "source": "no interval"})
                continue
            draws = widen(cell.boot[:, keep], cell.decades[keep], model, seed, cell.tpr_decades[keep])
            source = model.source
            row.update(tau=model.tau, drift=model.drift, df=model.df)
            sub = xc.Cell(**{**cell.__dict__, "true": cell.true[keep], "predicted": cell.predicted[keep]})
            records.append({**row, "source": source, **_score(sub, draws)})
    frame = pd.DataFrame(records)
    frame.attrs["n_cells"], frame.attrs["n_forecast"] = len(cells), len(ok)
    return frame


def verdict(board: pd.DataFrame) -> pd.DataFrame:
    """Per ladder and design: means over benchmarks, the worst benchmark, and the issue's targets."""
    g = board.groupby(["ladder", "design"], sort=False)
    out = g[["cov50", "cov90", "width90", "wis", "crps"]].mean()
    out["min_cov90"], out["min_cov50"] = g["cov90"].min(), g["cov50"].min()
    out["cells"] = g["cov90"].count()
    out["no_interval"] = board[board["source"] == "no interval"].groupby(["ladder", "design"]).size()
    out["no_interval"] = out["no_interval"].fillna(0).astype(int)
    out["meets"] = (
        out["cov90"].between(0.85, 0.95)
        & (out["min_cov90"] >= 0.6)
        & out["cov50"].between(0.40, 0.60)
        & (out["min_cov50"] > 0)
    )
    return out.reset_index()


def _markdown(table: pd.DataFrame, board: pd.DataFrame, n_boot: int) -> str:
    """The generated tables: per ladder and design, then per benchmark (cov50 / cov90, WIS) per design."""
    out = [f"Generated by `python benchmarks/extrapolation_designs.py --write` (n_boot {n_boot}, seed 0).", ""]
    shown = table.copy()
    shown["source"] = [_sources(board, lad, des) for lad, des in zip(shown["ladder"], shown["design"], strict=True)]
    out += [_md(shown.round(3)), ""]
    for ladder in xc.LADDERS:
        rows = board[board["ladder"] == ladder]
        designs = [d for d in DESIGNS if rows.loc[rows["design"] == d, "cov90"].notna().any()]
        wide = rows.pivot(index="benchmark", columns="design", values=["cov50", "cov90", "wis"])
        frame = pd.DataFrame(index=wide.index)
        for design in designs:
            frame[f"{design} cov50/cov90"] = [
                f"{a:.2f} / {b:.2f}" for a, b in zip(wide["cov50"][design], wide["cov90"][design], strict=True)
            ]
            frame[f"{design} WIS"] = wide["wis"][design].round(2)
        n = int(rows.groupby("benchmark")["n"].first().median())
        out += [f"### {ladder}: per benchmark (median {n} held-out runs each)", "", _md(frame.reset_index()), ""]
    return "\n".join(out)


def _robustness(table: pd.DataFrame, summaries: dict, n_boot: int, counts: list[int]) -> str:
    """DCLM and C4 per design at several bootstrap replicate counts (the rolling origins do not change)."""
    frames = [table.assign(n_boot=n_boot)]
    for n in counts:
        board = pd.concat([run_ladder(name, summaries, n) for name in ("dclm", "c4")], ignore_index=True)
        frames.append(verdict(board).assign(n_boot=n))
    both = pd.concat(frames, ignore_index=True)
    both = both[both["ladder"].isin(["dclm", "c4"])].assign(
        ladder=lambda f: f["ladder"].map({"dclm": "1 dclm", "c4": "2 c4"})
    )
    both["cell"] = [
        f"{a:.2f} / {b:.2f} [{c:.2f}] / {w:.3f}"
        for a, b, c, w in zip(both["cov50"], both["cov90"], both["min_cov90"], both["wis"], strict=True)
    ]
    wide = both.pivot(index=["ladder", "design"], columns="n_boot", values="cell").reset_index()
    wide["ladder"] = wide["ladder"].str[2:]
    wide.columns = [c if isinstance(c, str) else f"n_boot {c}: cov50 / cov90 [min] / WIS" for c in wide.columns]
    return "### Robustness to the bootstrap's replicate count\n\n" + _md(wide)


def _sources(board: pd.DataFrame, ladder: str, design: str) -> str:
    counts = board[(board["ladder"] == ladder) & (board["design"] == design)]["source"].value_counts()
    return "; ".join(f"{k} x{v}" for k, v in counts.items())


def _md(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    return "\n".join([head, rule, *("| " + " | ".join(map(str, row)) + " |" for row in frame.itertuples(index=False))])


def _write(text: str) -> None:
    """Replace the generated part of the findings file (between its markers), keeping the prose around it."""
    start, end = "<!-- tables:start -->", "<!-- tables:end -->"
    page = OUT.read_text() if OUT.exists() else f"# Extrapolation-error designs\n\n{start}\n{end}\n"
    head, rest = page.split(start, 1)
    OUT.write_text(f"{head}{start}\n{text}\n{end}{rest.split(end, 1)[1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-boot", type=int, default=200)
    parser.add_argument("--strategy", default="ensemble", help="or a fixed law the cache fitted (power)")
    parser.add_argument("--also", default="", help="other replicate counts for the robustness table, e.g. 20,50")
    parser.add_argument("--seed", type=int, default=0, help="seed of the widening's draws (the fits: 0)")
    parser.add_argument("--write", action="store_true", help="write benchmarks/extrapolation_designs.md")
    args = parser.parse_args()
    start = time.perf_counter()
    cells = {name: xc.cells(xc.fitted_cells(name, args.n_boot)) for name in xc.LADDERS}
    summaries = {name: xc.ladder_summary(c) for name, c in cells.items()}
    board = pd.concat(
        [run_ladder(name, summaries, args.n_boot, args.seed, args.strategy) for name in xc.LADDERS], ignore_index=True
    )
    table = verdict(board)
    pd.set_option("display.width", 200)
    print(table.round(3).to_string(index=False))
    board.to_pickle("/tmp/h30x_designs_board.pkl")
    print(f"{time.perf_counter() - start:.1f} s")
    if args.write:
        text = _markdown(table, board, args.n_boot)
        if args.strategy == "ensemble":  # the same designs on a fixed law (the backtest target: >= 0.80)
            fixed = pd.concat([run_ladder(n, summaries, args.n_boot, args.seed, "power") for n in ("dclm", "c4")])
            text += "\n\n### The fixed law `power` (a one-member ensemble), same designs\n\n"
            text += _md(verdict(fixed).drop(columns=["no_interval"]).round(3))
        counts = [int(n) for n in args.also.split(",") if n]
        if counts:
            text += "\n\n" + _robustness(table, summaries, args.n_boot, counts)
        _write(text)


if __name__ == "__main__":
    main()

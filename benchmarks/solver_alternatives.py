"""Measure the means for issue #21's batched solver: scipy per fit vs numpy, JAX and numba batched LM.

The workload is a forecast's bootstrap: ``bnsl_monotone`` on DCLM arc_easy acc_norm (TPR 20,
3e18 <= C <= 6e21, 40 runs, the raw score), mean Huber loss (delta 1e-3), 1000 replicates (the
data reweighted by multinomial counts, ``default_rng(0)``), each solved from 4 starts: the
full-data optimum (``minimize_law``) and that optimum with its break d1 moved to 3 points across
the fitted compute range; 4000 rows of 6 parameters (a, b_ref, c0, c_inf, log d1, log f1) x 40 points.

* ``scipy``: ``least_squares(method='trf', loss='huber', f_scale=delta)`` per row in a Python
  loop, rows repeated by their counts as benchcast does (the reference).
* ``numpy``, ``jax``, ``numba``: one algorithm, box-constrained Levenberg-Marquardt on
  iteratively reweighted Gauss-Newton (Huber weight min(1, delta/|r|) times the counts), bound
  parameters whose gradient points outwards frozen, steps clipped into the box, damping per row
  (/3 on a decrease of the loss, x4 otherwise). A row is converged when its projected gradient is
  below 1e-4 x its loss AND its predictions at the fitted runs moved by < 1e-4 (relative) over the
  last 3 iterations (or, stalled at damping 1e10, when the gradient test holds); 1000 iterations at
  most. numpy solves all rows at once (law.jacobian, dropping converged rows); JAX runs
  ``jit(vmap(lax.while_loop))`` with ``jacfwd`` of a jnp formula in float64; numba runs the rows
  one after another in one ``njit(cache=True)`` kernel with the formula and Jacobian by hand.
  A vmapped while_loop runs every row until the slowest stops; ``jax_compact`` instead runs 25
  iterations at a time and continues only the unfinished rows (padded to 4^k >= 64 rows: one
  compilation per size).

Each batched means runs in two fresh processes sharing a fresh cache folder (JAX's persistent
compilation cache, numba's ``NUMBA_CACHE_DIR``): the first gives the import time, the first call
(compilation included) and a warm call; the second the first call with the cache filled. Losses
and forecasts (at 1e23 FLOPs, best start per replicate) are compared with scipy's per replicate;
the warm call is timed at 100, 1000 and 4000 rows as well. The work is counted in row-iterations
(one Jacobian and one trial evaluation of one row): what each row needed, and what a vmapped
``while_loop`` executes (every row until the slowest stops), with the warm time per executed one.
Everything runs single-threaded (BLAS by threadpoolctl, XLA by its flags); the load is printed.

    . /work/main/.venv/bin/activate; export PYTHONPATH=$PWD/src   # numba: pip install numba
    python benchmarks/solver_alternatives.py [--replicates 1000] [--means numpy jax numba]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DATA = Path("/work/shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv")
LAW = "bnsl_monotone"
DELTA = 1e-3  # law.huber_delta
LOG_REF = math.log(1e18)  # the law's C_ref
QUERY = 1e23
N_STARTS = 4
MAX_ITER, HISTORY = 1000, 3
GTOL, PTOL = 1e-4, 1e-4  # projected gradient / loss; prediction change / prediction
LAM0, LAM_MIN, LAM_MAX = 1e-3, 1e-12, 1e10
CHUNK = 25  # jax_compact: iterations between compactions
SIZES = (100, 1000)  # extra batch sizes timed warm (the full batch is timed too)


def huber(r):
    a = np.abs(r)
    return np.where(a <= DELTA, 0.5 * r * r, DELTA * (a - 0.5 * DELTA))


def forward_u(U, log_c):
    """bnsl_monotone at parameters U (..., 6) in the optimiser's space (log d1, log f1)."""
    a, b, c0, c_inf, log_d1, log_f1 = (U[..., i : i + 1] for i in range(6))
    f1 = np.exp(log_f1)
    log_break = np.logaddexp(0, (log_c - log_d1) / f1) - np.logaddexp(0, (LOG_REF - log_d1) / f1)
    return a + b * np.exp(-c0 * (log_c - LOG_REF) - (c_inf - c0) * f1 * log_break)


def build_problem(n_replicates: int) -> dict:
    """The data, box, starts and replicate counts, through benchcast's public selection and engine."""
    import benchcast as bc
    from benchcast.fitting.engine.search import minimize_law
    from benchcast.fitting.spec import FitSpec, design
    from benchcast.laws.registry import get_law

    law = get_law(LAW)
    spec = FitSpec(law=LAW, benchmark="arc_easy", metric="acc_norm", tpr=20, min_flops=3e18, max_flops=6e21)
    rows, _ = design(bc.load(DATA), spec)
    flops, y = rows["flops"].to_numpy(float), rows["value"].to_numpy(float)
    optimum = minimize_law(law, {"flops": flops}, y, with_stderr=False)
    is_log = np.array([p.log for p in law.parameters])
    lo, hi = (
        np.array([np.log(v) if p.log else v for p in law.parameters for v in [p.bound(side)]])
        for side in ("lower", "upper")
    )
    u_star = np.where(is_log, np.log(np.abs(optimum.theta)), optimum.theta)
    log_c = np.log(flops)
    assert np.allclose(forward_u(u_star, log_c), law.forward(optimum.theta, {"flops": flops}))
    starts = np.repeat(u_star[None], N_STARTS, axis=0)
    starts[1:, 4] = np.linspace(log_c.min(), log_c.max(), N_STARTS + 1)[1:-1]
    n = y.size
    counts = np.random.default_rng(0).multinomial(n, np.full(n, 1 / n), size=n_replicates).astype(float)
    return {
        "log_c": log_c,
        "y": y,
        "lo": lo,
        "hi": hi,
        "U0": np.tile(starts, (n_replicates, 1)),
        "W": np.repeat(counts, N_STARTS, axis=0),
        "loss_full": optimum.loss,
    }


def theta_of(U):
    """Natural parameters (d1, f1 in FLOPs and units) of optimiser-space rows."""
    return np.concatenate([U[..., :4], np.exp(U[..., 4:])], axis=-1)


def solve_scipy(p):
    """The reference: scipy's trust-region solve per row, on the rows repeated by their counts."""
    from scipy.optimize import least_squares

    from benchcast.laws.registry import get_law

    law, U, conv = get_law(LAW), np.empty_like(p["U0"]), np.zeros(len(p["U0"]), bool)
    flops, iterations = np.exp(p["log_c"]), np.zeros(len(p["U0"]), int)

    def jac(u, X, y):
        return (law.jacobian(theta_of(u), X)[1] * np.r_[1, 1, 1, 1, np.exp(u[4:])][:, None]).T

    for row, (u0, w) in enumerate(zip(p["U0"], p["W"], strict=True)):
        index = np.repeat(np.arange(flops.size), w.astype(int))
        data = ({"flops": flops[index]}, p["y"][index])
        fit = least_squares(
            lambda u, X, y: law.forward(theta_of(u), X) - y,
            u0,
            jac=jac,
            bounds=(p["lo"], p["hi"]),
            method="trf",
            loss="huber",
            f_scale=DELTA,
            args=data,
        )
        U[row], conv[row], iterations[row] = fit.x, fit.status > 0, fit.nfev
    return U, conv, iterations


def solve_numpy(p):
    """Batched LM over every row at once; converged rows leave the batch."""
    from benchcast.laws.registry import get_law

    law, X, y, lo, hi = get_law(LAW), {"flops": np.exp(p["log_c"])}, p["y"], p["lo"], p["hi"]
    U, W = p["U0"].copy(), p["W"]
    n_rows, n = W.shape
    lam, conv, hist = np.full(n_rows, LAM0), np.zeros(n_rows, bool), np.zeros((n_rows, HISTORY, n))
    iterations = np.zeros(n_rows, int)
    rows, total, tol = np.arange(n_rows), W.sum(1), 1e-10 * (hi - lo)
    for it in range(MAX_ITER):
        iterations[rows] += 1
        u, w, N = U[rows], W[rows], total[rows, None]
        theta = theta_of(u)
        pred, jac = law.jacobian(theta, X)
        jac[:, 4:] *= theta[:, 4:, None]  # d/dlog d1, d/dlog f1
        r = pred - y
        loss = (w * huber(r)).sum(1) / N[:, 0]
        g = (jac @ (w * np.clip(r, -DELTA, DELTA))[..., None])[..., 0] / N
        weight = w * np.minimum(1, DELTA / np.maximum(np.abs(r), 1e-300)) / N  # counts x Huber's IRLS weight
        A = (jac * weight[:, None]) @ jac.transpose(0, 2, 1)
        free = ~(((u <= lo + tol) & (g > 0)) | ((u >= hi - tol) & (g < 0)))
        pg = np.where(free, g, 0.0)
        moved = np.abs(pred - hist[rows, it % HISTORY]).max(1)
        hist[rows, it % HISTORY] = pred
        small = np.abs(pg).max(1) <= GTOL * loss
        stable = (it >= HISTORY) & (moved <= PTOL * np.abs(pred).max(1))
        done = (small & stable) | (lam[rows] > LAM_MAX)
        conv[rows[done]] = small[done]
        keep = ~done
        rows, u, loss, A, pg, free = rows[keep], u[keep], loss[keep], A[keep], pg[keep], free[keep]
        if not rows.size:
            break
        mask = free[:, :, None] & free[:, None, :]
        diag = np.diagonal(A, axis1=1, axis2=2)
        damping = np.where(free, lam[rows, None] * (diag + 1e-12 * diag.max(1)[:, None]), 1.0)
        M = np.where(mask, A, 0.0) + np.eye(6) * damping[:, None]
        trial = np.clip(u + np.linalg.solve(M, -pg[..., None])[..., 0], lo, hi)
        trial_loss = (W[rows] * huber(forward_u(trial, p["log_c"]) - y)).sum(1) / total[rows]
        better = trial_loss < loss
        U[rows[better]] = trial[better]
        lam[rows] = np.where(better, np.maximum(lam[rows] / 3, LAM_MIN), lam[rows] * 4)
    return U, conv, iterations


def make_jax_solver(compact: bool):
    """The same LM per row in jnp, vmapped over rows and jitted; Jacobian by jacfwd. ``compact``: run
    CHUNK iterations at a time and continue only the unfinished rows, padded to a power of 4 (>= 64)."""
    import jax
    import jax.numpy as jnp

    def forward(u, log_c):
        a, b, c0, c_inf, log_d1, log_f1 = u
        f1 = jnp.exp(log_f1)
        log_break = jax.nn.softplus((log_c - log_d1) / f1) - jax.nn.softplus((LOG_REF - log_d1) / f1)
        return a + b * jnp.exp(-c0 * (log_c - LOG_REF) - (c_inf - c0) * f1 * log_break)

    jacobian = jax.jacfwd(forward)

    def jhuber(r):
        return jnp.where(jnp.abs(r) <= DELTA, 0.5 * r * r, DELTA * (jnp.abs(r) - 0.5 * DELTA))

    def advance(state, w, log_c, y, lo, hi, limit):
        N, tol = w.sum(), 1e-10 * (hi - lo)

        def body(state):
            u, lam, hist, it, _, _ = state
            pred, jac = forward(u, log_c), jacobian(u, log_c)
            r = pred - y
            loss = jnp.sum(w * jhuber(r)) / N
            g = jac.T @ (w * jnp.clip(r, -DELTA, DELTA)) / N
            A = (jac * (w * jnp.minimum(1, DELTA / jnp.maximum(jnp.abs(r), 1e-300)))[:, None]).T @ jac / N
            free = ~(((u <= lo + tol) & (g > 0)) | ((u >= hi - tol) & (g < 0)))
            pg = jnp.where(free, g, 0.0)
            moved = jnp.max(jnp.abs(pred - hist[it % HISTORY]))
            hist = hist.at[it % HISTORY].set(pred)
            small = jnp.max(jnp.abs(pg)) <= GTOL * loss
            done = (small & (it >= HISTORY) & (moved <= PTOL * jnp.max(jnp.abs(pred)))) | (lam > LAM_MAX)
            diag = jnp.diag(A)
            M = jnp.where(free[:, None] & free[None, :], A, 0.0)
            M = M + jnp.diag(jnp.where(free, lam * (diag + 1e-12 * diag.max()), 1.0))
            trial = jnp.clip(u + jnp.linalg.solve(M, -pg), lo, hi)
            better = (jnp.sum(w * jhuber(forward(trial, log_c) - y)) / N < loss) & ~done
            lam = jnp.where(better, jnp.maximum(lam / 3, LAM_MIN), lam * 4)
            return jnp.where(better, trial, u), lam, hist, it + 1, done, done & small

        return jax.lax.while_loop(lambda s: ~s[4] & (s[3] < limit), body, state)

    batched = jax.jit(jax.vmap(advance, in_axes=(0, 0, None, None, None, None, None)))

    def solve(p):
        n_rows, n = p["W"].shape
        state = [p["U0"].copy(), np.full(n_rows, LAM0), np.zeros((n_rows, HISTORY, n)), np.zeros(n_rows, int)]
        state += [np.zeros(n_rows, bool), np.zeros(n_rows, bool)]
        active, limit = np.arange(n_rows), 0
        while active.size and limit < MAX_ITER:
            limit = limit + CHUNK if compact else MAX_ITER
            index = np.resize(active, max(64, 4 ** math.ceil(math.log(active.size, 4))) if compact else n_rows)
            out = batched(tuple(s[index] for s in state), p["W"][index], p["log_c"], p["y"], p["lo"], p["hi"], limit)
            for s, o in zip(state, out, strict=True):
                s[active] = np.asarray(o)[: active.size]
            active = active[~state[4][active]]
        return state[0], state[5], state[3]

    return solve


def lm_rows(U0, W, log_c, y, lo, hi):
    """The same LM row after row in plain loops, for numba (the formula's Jacobian by hand, 6x6 Cholesky)."""
    n_rows, n = W.shape
    U, conv, iterations = U0.copy(), np.zeros(n_rows, np.bool_), np.zeros(n_rows, np.int64)
    pred, jac, hist = np.empty(n), np.empty((n, 6)), np.empty((HISTORY, n))
    g, A, step, trial, free = np.empty(6), np.empty((6, 6)), np.empty(6), np.empty(6), np.empty(6, np.bool_)

    def loss_at(u, w, with_jac):  # fills pred (and jac) at u; returns the counts-weighted Huber sum
        f1, c1 = math.exp(u[5]), u[3] - u[2]
        z_ref = (LOG_REF - u[4]) / f1
        s_ref, softplus_ref = 1 / (1 + math.exp(-z_ref)), max(z_ref, 0.0) + math.log1p(math.exp(-abs(z_ref)))
        total = 0.0
        for i in range(n):
            z, from_ref = (log_c[i] - u[4]) / f1, log_c[i] - LOG_REF
            log_break = max(z, 0.0) + math.log1p(math.exp(-abs(z))) - softplus_ref
            term = math.exp(-u[2] * from_ref - c1 * f1 * log_break)
            pred[i] = u[0] + u[1] * term
            r = abs(pred[i] - y[i])
            total += w[i] * (0.5 * r * r if r <= DELTA else DELTA * (r - 0.5 * DELTA))
            if with_jac:
                neg, s = -u[1] * term, 1 / (1 + math.exp(-z))
                jac[i, 0], jac[i, 1] = 1.0, term
                jac[i, 2], jac[i, 3] = neg * (from_ref - f1 * log_break), neg * f1 * log_break
                jac[i, 4] = neg * c1 * (s_ref - s)
                jac[i, 5] = neg * c1 * (log_break - z * s + z_ref * s_ref) * f1
        return total

    for row in range(n_rows):
        u, w, lam = U[row], W[row], LAM0
        N = w.sum()
        hist[:] = 0.0
        for it in range(MAX_ITER):
            iterations[row] += 1
            loss = loss_at(u, w, True) / N
            g[:] = 0.0
            A[:] = 0.0
            for i in range(n):
                r = pred[i] - y[i]
                psi, weight = w[i] * min(max(r, -DELTA), DELTA) / N, w[i] * min(1.0, DELTA / max(abs(r), 1e-300)) / N
                for k in range(6):
                    g[k] += jac[i, k] * psi
                    for m in range(k + 1):
                        A[k, m] += jac[i, k] * jac[i, m] * weight
            moved, scale, slot = 0.0, 0.0, it % HISTORY
            for i in range(n):
                moved, scale = max(moved, abs(pred[i] - hist[slot, i])), max(scale, abs(pred[i]))
                hist[slot, i] = pred[i]
            biggest, diag_max = 0.0, 0.0
            for k in range(6):
                tol = 1e-10 * (hi[k] - lo[k])
                free[k] = not ((u[k] <= lo[k] + tol and g[k] > 0) or (u[k] >= hi[k] - tol and g[k] < 0))
                biggest, diag_max = max(biggest, abs(g[k]) if free[k] else 0.0), max(diag_max, A[k, k])
            small = biggest <= GTOL * loss
            if (small and it >= HISTORY and moved <= PTOL * scale) or lam > LAM_MAX:
                conv[row] = small
                break
            for k in range(6):  # damped system on the free parameters, lower triangle, Cholesky in place
                for m in range(k):
                    A[k, m] = A[k, m] if free[k] and free[m] else 0.0
                A[k, k] = A[k, k] * (1 + lam) + lam * 1e-12 * diag_max if free[k] else 1.0
                step[k] = -g[k] if free[k] else 0.0
            for k in range(6):
                for m in range(k):
                    A[k, k] -= A[k, m] ** 2
                A[k, k] = math.sqrt(A[k, k])
                for i in range(k + 1, 6):
                    for m in range(k):
                        A[i, k] -= A[i, m] * A[k, m]
                    A[i, k] /= A[k, k]
            for k in range(6):
                for m in range(k):
                    step[k] -= A[k, m] * step[m]
                step[k] /= A[k, k]
            for k in range(5, -1, -1):
                for m in range(k + 1, 6):
                    step[k] -= A[m, k] * step[m]
                step[k] /= A[k, k]
                trial[k] = min(max(u[k] + step[k], lo[k]), hi[k])
            if loss_at(trial, w, False) / N < loss:
                u[:] = trial
                lam = max(lam / 3, LAM_MIN)
            else:
                lam *= 4
    return U, conv, iterations


def worker(means: str, problem: Path, out: Path) -> None:
    """One process of one means: import time, first call, warm calls; prints JSON, saves the solution."""
    import benchcast.laws.registry  # noqa: F401  (the CLI has it anyway: the import column is the means' own)

    p = dict(np.load(problem))
    clock = time.perf_counter()
    if means.startswith("jax"):
        os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
        import jax

        jax.config.update("jax_enable_x64", True)  # float32 by default: losses of 1e-6 would be noise
        jax.config.update("jax_compilation_cache_dir", os.environ["SOLVER_CACHE"])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        solve = make_jax_solver(compact=means == "jax_compact")
    elif means == "numba":
        import numba

        kernel = numba.njit(cache=True)(lm_rows)

        def solve(p):
            return kernel(p["U0"], p["W"], p["log_c"], p["y"], p["lo"], p["hi"])
    else:
        solve = solve_numpy
    timings = {"import": time.perf_counter() - clock}
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        for size in dict.fromkeys((len(p["U0"]), *SIZES)):
            part = {**p, "U0": p["U0"][:size], "W": p["W"][:size]}
            for call in ("first", "warm"):
                clock = time.perf_counter()
                U, conv, iterations = solve(part)
                timings[f"{call}_{size}"] = time.perf_counter() - clock
            if size == len(p["U0"]):
                np.savez(out, U=U, conv=conv, iterations=iterations)
    print(json.dumps(timings))


def per_replicate(p, U):
    """Best start per replicate: its loss and its forecast at QUERY."""
    losses = (p["W"] * huber(forward_u(U, p["log_c"]) - p["y"])).sum(1) / p["W"].sum(1)
    best = losses.reshape(-1, N_STARTS).argmin(1) + np.arange(0, len(U), N_STARTS)
    return losses[best], forward_u(U[best], np.log(QUERY))[:, 0], best


def table_row(means, times, solution, reference, scipy_s):
    """One row of the table: timings, agreement with scipy per replicate, convergence and work."""
    (loss, forecast, best), (ref_loss, ref_forecast, _) = per_replicate(solution, solution["U"]), reference
    rel, diff, iterations = (loss - ref_loss) / ref_loss, np.abs(forecast - ref_forecast), solution["iterations"]
    executed = iterations.size * iterations.max() if means == "jax" else iterations.sum()  # vmap: all run to the last
    return (
        f"| {means} | "
        + " | ".join(f"{t:.2f}" if isinstance(t, float) else t for t in times)
        + f" | {scipy_s / times[-1]:.0f} | {np.median(np.abs(rel)):.1e} / {rel.min():+.1e} / {rel.max():+.1e} "
        f"| {(rel > 1e-6).sum()} / {(rel < -1e-6).sum()} | {np.median(diff):.1e} / {diff.max():.1e} "
        f"| {(~solution['conv']).sum()} ({(~solution['conv'][best]).sum()}) "
        f"| {iterations.sum()} / {iterations.size * iterations.max()} | {1e6 * times[-1] / executed:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--means", nargs="+", default=["numpy", "jax", "jax_compact", "numba"])
    parser.add_argument("--worker", nargs=3, metavar=("MEANS", "PROBLEM", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker[0], Path(args.worker[1]), Path(args.worker[2]))
    from threadpoolctl import threadpool_limits

    print("load before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    p = build_problem(args.replicates)
    rows = len(p["U0"])
    sizes = tuple(dict.fromkeys((*SIZES, rows)))
    print(f"{LAW} arc_easy acc_norm, {p['y'].size} points, {args.replicates} replicates x {N_STARTS} starts = {rows}")
    folder = Path(tempfile.mkdtemp(prefix="solver_alternatives_"))
    np.savez(folder / "problem.npz", **p)
    with threadpool_limits(1):
        clock = time.perf_counter()
        U, conv, iterations = solve_scipy(p)
        scipy_s = time.perf_counter() - clock
    reference = per_replicate(p, U)
    lines = [
        "| means | import s | first call s | cached first call s (new process) | warm s | speedup vs scipy (warm) "
        "| loss rel. diff med abs / min / max | replicates worse / better by > 1e-6 | forecast 1e23 abs diff med / max "
        "| unconverged rows (best of replicate) | row-iterations sum / rows x max | us per executed row-iteration |",
        "|" + "---|" * 12,
    ]
    scipy_solution = {**p, "U": U, "conv": conv, "iterations": iterations}
    lines.append(table_row("scipy", ("-", "-", "-", scipy_s), scipy_solution, reference, scipy_s))
    scaling = {}
    missing = {"jax": "jax", "jax_compact": "jax", "numba": "numba"}
    for means in [m for m in args.means if missing.get(m) and importlib.util.find_spec(missing[m]) is None]:
        print(f"{means}: skipped, {missing[means]} is not installed (pip install {missing[means]}; not a dependency)")
    args.means = [m for m in args.means if not (missing.get(m) and importlib.util.find_spec(missing[m]) is None)]
    for means in args.means:
        env = {**os.environ, "SOLVER_CACHE": str(folder / f"cache_{means}"), "NUMBA_CACHE_DIR": str(folder / "numba")}
        runs = []
        for attempt in range(2):
            out = folder / f"{means}_{attempt}.npz"
            command = [sys.executable, __file__, "--worker", means, str(folder / "problem.npz"), str(out)]
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"{means} worker failed:\n{done.stderr}")
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        times = (runs[0]["import"], runs[0][f"first_{rows}"], runs[1][f"first_{rows}"], runs[0][f"warm_{rows}"])
        lines.append(table_row(means, times, {**p, **np.load(folder / f"{means}_1.npz")}, reference, scipy_s))
        scaling[means] = [(runs[0][f"first_{size}"], runs[0][f"warm_{size}"]) for size in sizes]
    print("\n".join(lines))
    print("\nscaling, first call (compile included) / warm call in s, by rows (replicate x start):")
    print("| means | " + " | ".join(f"{size} rows" for size in sizes) + " |\n|" + "---|" * (len(sizes) + 1))
    for means, by_size in scaling.items():
        print(f"| {means} | " + " | ".join(f"{first:.2f} / {warm:.3f}" for first, warm in by_size) + " |")
    print("\nloss rel. diff: (loss - scipy's)/scipy's of each replicate's best start (> 0: worse than scipy);")
    print("scipy's row-iterations are its evaluations (nfev); jax's loop executes rows x max (vmap of while_loop)")
    print("load after:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()

"""The questions a law answers about itself, used by planning, plots, law selection and artifacts.

:class:`LawQuestions` is a base of :class:`benchcast.laws.base.Law`; it reads the law's declared
attributes (``name``, ``covariates``, ``parameters``, ...) and never fits anything.
"""

from __future__ import annotations

import numpy as np

from benchcast.errors import BenchcastError

TPR_SPREAD = 0.1  # log tokens-per-parameter must vary by this much (rms) at equal size to separate N from D


def spans_tprs(rows) -> bool:
    """Whether runs' tokens per parameter vary at a given model size, separating N from D."""
    if not {"params", "tokens"} <= set(rows.columns):
        return bool("tpr" in rows and rows["tpr"].round(6).nunique() > 1)
    params, tokens = rows["params"].to_numpy(float), rows["tokens"].to_numpy(float)
    ok = np.isfinite(params) & np.isfinite(tokens) & (params > 0) & (tokens > 0)
    if ok.sum() < 3:
        return False
    log_n, log_t = np.log(params[ok]), np.log(tokens[ok] / params[ok])
    design = np.column_stack([np.ones_like(log_n), log_n])
    coef, *_ = np.linalg.lstsq(design, log_t, rcond=None)
    return bool(np.sqrt(np.mean((log_t - design @ coef) ** 2)) > TPR_SPREAD)


class LawQuestions:
    """What a law says about its covariates, limits, parameter vectors and applicability."""

    @property
    def models_tpr(self) -> bool:
        """Whether the law separates parameters from tokens (it needs, and models, several
        tokens-per-parameter ratios); a law of compute alone reads runs at several TPRs as one curve.

        Returns
        -------
        bool
        """
        return {"params", "tokens"} <= set(self.covariates)

    def across_tprs(self, rows) -> str:
        """Why a fit of this law to ``rows`` is doubtful because the runs span several tokens-per-parameter
        ratios that a law of compute alone reads as one curve ('' for a law of N and D, or runs at one TPR).

        Parameters
        ----------
        rows : pandas.DataFrame
            The fitted runs (``params`` and ``tokens``, or ``tpr``; see :func:`spans_tprs`).

        Returns
        -------
        str
            The note, naming the TPRs, or ''.
        """
        if self.models_tpr or not spans_tprs(rows):
            return ""
        if {"params", "tokens"} <= set(rows.columns):
            params = rows["params"].to_numpy(float)
            sizes = np.log10(params[np.isfinite(params) & (params > 0)])
            if not len(sizes) or np.ptp(sizes) < 0.01:
                return ""  # one model size (checkpoints of one run): its runs lie on one curve, whatever their TPRs
            tpr = rows["tokens"].to_numpy(float) / params
        else:
            tpr = rows["tpr"].to_numpy(float)
        tpr = tpr[np.isfinite(tpr) & (tpr > 0)]
        _, group = np.unique(np.round(np.log10(tpr), 2), return_inverse=True)  # ratios within ~2 % are one
        levels = [float(np.median(tpr[group == g])) for g in range(group.max() + 1)]
        seen = ", ".join(f"{v:.3g}" for v in levels[:6]) + (", ..." if len(levels) > 6 else "")
        return (
            f"{self.name} is a law of compute alone fitted across {len(levels)} tokens-per-parameter ratios ({seen}): "
            "it reads them as one curve, so its forecast is for no TPR in particular; fit one TPR (--tpr 20) or a "
            "law of parameters and tokens (nd, nd_floor)"
        )

    def covariates_at(self, theta: np.ndarray, flops: np.ndarray, *, tpr: float | None = None) -> dict:
        """Covariates of a run of compute ``flops`` (k, when the law has it, is added by the caller).

        Compute laws take C itself; laws in N and D split C = 6 N D at a tokens-per-parameter
        ratio, which the caller must give (a law of N and D cannot choose it).

        Parameters
        ----------
        theta : ndarray
            The law's parameters in natural units, shape (n_params,).
        flops : ndarray
            Training compute of each run, in FLOPs.
        tpr : float, optional
            Tokens per parameter of each run (D / N); required by laws in parameters and tokens.

        Returns
        -------
        dict of str to ndarray
            The covariates the law predicts from, by name ('flops', or 'params' and 'tokens').
        """
        flops = np.asarray(flops, float)
        given = set(self.covariates) - {"k"}
        if given == {"flops"}:
            return {"flops": flops}
        if given == {"params", "tokens"}:
            if tpr is None or not np.isfinite(tpr) or tpr <= 0:
                raise BenchcastError(
                    f"law {self.name!r} is a function of parameters and tokens: a run of compute C needs a "
                    f"tokens-per-parameter ratio (tpr > 0) to split C = 6 N D; got {tpr!r}."
                )
            params = np.sqrt(flops / (6.0 * tpr))
            return {"params": params, "tokens": flops / (6.0 * params)}
        raise BenchcastError(
            f"law {self.name!r} is a function of {', '.join(self.covariates)}, not of training compute."
        )

    def limit(self, theta: np.ndarray, q_rand: float, k: float | None = None) -> tuple[float, str]:
        """The score the law approaches as training compute grows without bound, and what that
        limit is (each law states its own; there is no numerical stand-in).

        Parameters
        ----------
        theta : ndarray
            The law's parameters in natural units, shape (n_params,).
        q_rand : float
            The benchmark's chance level, a score in [0, 1].
        k : float, optional
            The number of attempts, for a pass@k law.

        Returns
        -------
        score : float
            The limiting score.
        meaning : str
            What the limit is, in words.
        """
        raise BenchcastError(f"law {self.name!r} states no limit in training compute.")

    def limit_in_k(self, theta: np.ndarray, q_rand: float, flops: float) -> tuple[float, str]:
        """The score approached as the number of attempts k grows without bound, at ``flops``.

        Parameters
        ----------
        theta : ndarray
            The law's parameters in natural units, shape (n_params,).
        q_rand : float
            The benchmark's chance level, a score in [0, 1].
        flops : float
            Training compute of the run, in FLOPs.

        Returns
        -------
        score : float
            The limiting score.
        meaning : str
            What the limit is, in words.
        """
        raise BenchcastError(f"law {self.name!r} is not a function of the number of attempts k.")

    def envelope(self, theta: np.ndarray):
        """The compute-optimal envelope of a law in parameters and tokens (SPEC §3.3).

        Parameters
        ----------
        theta : ndarray
            The law's parameters in natural units, shape (n_params,).
        """
        raise BenchcastError(
            f"law {self.name!r} has no compute-optimal N/D split: that needs a law in parameters and tokens "
            "with a floor, such as params_tokens (S2)."
        )

    def check_params(self, theta: np.ndarray, allow_outside=()) -> list[str]:
        """Problems with a parameter vector (wrong length, not finite, outside its bounds).

        Parameters
        ----------
        theta : array_like
            The parameter vector, natural units.
        allow_outside : iterable of str
            Parameters a closed-form fit legitimately put outside their range (reported by the fit
            as 'at bound'); anything else outside is an error.

        Returns
        -------
        list of str
            One sentence per problem; empty when the vector is valid.
        """
        theta = np.asarray(theta, float)
        if theta.shape != (self.n_params,):
            return [f"expected {self.n_params} parameters ({', '.join(self.param_names)}), got {theta.size}"]
        problems = []
        for p, value in zip(self.parameters, theta, strict=True):
            if not np.isfinite(value):
                problems.append(f"{p.name} = {value!r} is not finite")
            elif not p.lower <= value <= p.upper and p.name not in allow_outside:
                problems.append(f"{p.name} = {value!r} lies outside its range [{p.lower:g}, {p.upper:g}]")
        return problems

    def applicable(self, rows, *, proxy: str | None = None, has_gold: bool = False) -> str:
        """Why this law cannot be fitted to these design rows ('' when it can): used by law
        selection, so that no module outside the laws needs to know which law needs what.

        Parameters
        ----------
        rows : pandas.DataFrame
            The design rows of one benchmark and metric (columns 'metric' and 'tpr' at least).
        proxy : str, optional
            The proxy loss ('benchmark:metric') the fit would use, if any.
        has_gold : bool
            Whether gold-reference log-likelihoods are available.

        Returns
        -------
        str
            The reason, or '' when the law applies.
        """
        if not self.selectable:
            return f"{self.name} is not a per-benchmark forecasting law"
        is_passk = str(rows["metric"].iloc[0]) == "pass@k"
        if self.default_metric == "pass@k" and not is_passk:
            return f"{self.name} models pass@k metrics"
        if self.models_tpr and not spans_tprs(rows):
            return (
                f"{self.name} separates parameters from tokens: it needs runs at several tokens-per-parameter "
                "ratios for one model size (a fixed-TPR or fixed-token ladder cannot tell N from D)"
            )
        if "proxy" in self.fit_covariates and not proxy:
            return f"{self.name} needs a proxy loss (proxy='benchmark:metric')"
        if "gold" in self.covariates and not has_gold:
            return f"{self.name} needs gold-reference log-likelihoods"
        return ""

    def describe(self) -> dict:
        """The law's declaration, JSON-ready (shown by `benchcast laws`).

        Returns
        -------
        dict
            Name, formula, reference, description, covariates, target, loss, constraints and each
            parameter's name, bounds and description.
        """
        return {
            "name": self.name,
            "formula": self.formula,
            "reference": self.reference,
            "description": self.description,
            "covariates": list(self.covariates),
            "fit_covariates": list(self.fit_covariates),
            "target": self.target,
            "loss": self.loss,
            "constraints": list(self.constraints),
            "parameters": [
                {"name": p.name, "lower": p.lower, "upper": p.upper, "description": p.description}
                for p in self.parameters
            ],
        }

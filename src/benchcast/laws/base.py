"""The declarative law object shared by every scaling law, in the manner of ``scipy.stats`` distributions:
parameters (:mod:`benchcast.laws.parameters`), covariates, target transform, loss and a vectorised ``forward``; the
numerical work lives in :mod:`benchcast.fitting`, once."""

from __future__ import annotations

import numpy as np

from benchcast.data.chance import filter_margin

# the names below are part of this module's API (laws import them from here)
from benchcast.laws.fitted import FittedLaw
from benchcast.laws.parameters import Parameter, SearchSettings
from benchcast.laws.questions import LawQuestions
from benchcast.laws.transforms import normalise, to_score


class Law(LawQuestions):
    """Base class. Subclasses set the class attributes and implement :meth:`forward`; the questions a
    law answers about itself come from :class:`~benchcast.laws.questions.LawQuestions`."""

    name: str = ""
    formula: str = ""
    reference: str = ""
    description: str = ""
    covariates: tuple[str, ...] = ("flops",)  # needed to predict
    fit_covariates: tuple[str, ...] = ()  # needed only to fit (e.g. a proxy loss)
    # the proxy loss a fit reads when none is given ('benchmark:metric', formatted with the fit's
    # benchmark and gold_metric); None: the caller must name one
    default_proxy: str | tuple[str, ...] | None = None  # a tuple: the first the data holds
    target: str = "loglog"  # the fitted space: 'score', 'neglog' = -log Q', 'loglog' = log(-log Q')
    loss: str = "huber"  # 'huber' or 'lsq' (closed-form laws solve least squares exactly)
    huber_delta: float = 1e-3
    uses_margin: bool = True  # drop points with Q <= Q_rand + margin before fitting
    default_margin: float | None = None  # None: benchcast.chance.filter_margin
    per_k: bool = True  # pass@k metrics are fitted one k at a time
    default_metric: str | None = None
    selectable: bool = True  # offered by law selection (recommend, bench)
    # a default-strategy candidate only on runs spanning at least this many decades of compute
    # (the default's law choice reads it: benchcast.forecasting.selection.too_short)
    min_ladder_decades: float = 0.0
    clip_scores: bool = False  # forecasts can leave [0, 1]: clip them and say so
    search: SearchSettings = SearchSettings()
    # why each parameter bounded by search_box is bounded, in words (shown where a fit reaches it)
    search_box_reasons: dict[str, str] = {}
    n_presolved: int = 0  # parameters fixed by presolve() from other data (not by the scores)
    parameters: tuple[Parameter, ...] = ()
    # Modelling constraints the law imposes beyond its formula, in words (shown by describe() and
    # `benchcast laws`); each must hold for every fitted parameter vector, e.g. by reparameterisation.
    constraints: tuple[str, ...] = ()
    # An example every registered law declares, as scipy.stats' ``distcont`` list does for its
    # distributions: tests/laws/test_law_battery.py fits it back and checks the Jacobian, the artifact
    # round-trip and planning from it, so a law without one fails the battery.
    example_params: dict[str, float] | None = None  # every parameter, natural units
    # (low, high) of each covariate the example's runs span: log-spaced, crossed with each other;
    # a proxy loss (fit_covariates) is not listed: it is the law's own stage 1 at these runs
    example_covariates: dict[str, tuple[float, float]] | None = None
    example_q_rand: float = 0.0  # the chance level of the example benchmark
    example_k: int | None = None  # the k a per-k pass@k law is fitted at
    # parameters the example's runs do not pin down (a flat direction of the fit): the battery
    # checks the law's predictions for them, not their values
    example_unidentified: tuple[str, ...] = ()

    @property
    def param_names(self) -> list[str]:
        return [p.name for p in self.parameters]

    @property
    def n_params(self) -> int:
        return len(self.parameters)

    @property
    def n_free(self) -> int:
        """Parameters the scores determine (the presolved ones come from other data): a fit needs more points."""
        return self.n_params - self.n_presolved

    def forward(self, theta: np.ndarray, X: dict[str, np.ndarray]) -> np.ndarray:
        """Prediction in target space; ``theta`` has shape (..., n_params), broadcast over points.

        Parameters
        ----------
        theta : ndarray
            Parameters in natural units, shape (..., n_params).
        X : dict of str to ndarray
            The covariates of the points by name ('flops' in FLOPs, 'params', 'tokens', 'k', ...),
            each shape (n,).

        Returns
        -------
        ndarray
            The prediction in the law's target space, shape (..., n).
        """
        raise NotImplementedError

    def jacobian(self, theta: np.ndarray, X: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
        """Prediction and its exact Jacobian in natural parameters, or None where the law declares
        none (the engine then takes central differences). A law that declares one makes every fit,
        refit and bootstrap cheaper.

        Parameters
        ----------
        theta : ndarray
            Parameters in natural units, shape (..., n_params).
        X : dict of str to ndarray
            The covariates of the points by name, each shape (n,).

        Returns
        -------
        tuple of ndarray or None
            ``(forward, jac)`` with shapes (..., n) and (..., n_params, n), ``jac`` a new array of
            the call's own (the engine scales it in place; a read-only one is copied first).
        """
        return None

    def closed_form_weighted(self, X: dict[str, np.ndarray], y: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
        """The closed-form solution for many weightings of the same points at once (bootstrap
        replicates); must equal :meth:`closed_form` on each resample.

        Parameters
        ----------
        X : dict of str to ndarray
            The covariates of the points by name, each shape (n,).
        y : ndarray
            The fitted target (target space), shape (n,).
        weights : ndarray
            How often each point was drawn, one replicate per row, shape (B, n).

        Returns
        -------
        ndarray or None
            Parameters in natural units, shape (B, n_params); None where the law has no closed form.
        """
        return None

    def replicate_strategy(self, loss: str) -> str:
        """How bootstrap replicates of this law are refitted.

        Parameters
        ----------
        loss : str
            The fit's loss, 'huber' or 'lsq'.

        Returns
        -------
        str
            'closed' (the exact least-squares solution of each resample) or 'batched' (one batched
            Levenberg-Marquardt solve over all replicates, from the full-data optimum and the full
            data's best-ranked candidates; a presolved stage re-solved per replicate).
        """
        if type(self).closed_form is not Law.closed_form and loss == "lsq":
            return "closed"
        return "batched"  # fitting.engine.replicates.refit_weighted

    def closed_form(self, X: dict[str, np.ndarray], y: np.ndarray) -> np.ndarray | None:
        """Exact solution of the fitting problem where one exists (else None).

        Parameters
        ----------
        X : dict of str to ndarray
            The covariates of the points by name, each shape (n,).
        y : ndarray
            The fitted target (target space), shape (n,).

        Returns
        -------
        ndarray or None
            Parameters in natural units, shape (n_params,); None where the law has no closed form.
        """
        return None

    def refinement_starts(self, theta: np.ndarray, X: dict[str, np.ndarray]) -> np.ndarray | None:
        """Starts near a fitted optimum ``theta`` that a local search from it cannot reach. The
        engine settles them and keeps the best if it is lower: a fit can only improve.

        Parameters
        ----------
        theta : ndarray
            The fitted optimum, natural units, shape (n_params,).
        X : dict of str to ndarray
            The covariates of the points by name, each shape (n,).

        Returns
        -------
        ndarray or None
            Starts in natural units, shape (S, n_params); None where the law has none.
        """
        return None

    def search_box(self, X: dict[str, np.ndarray]) -> dict[str, tuple[float, float]]:
        """Bounds of some parameters that depend on the fitted runs (natural units), narrowing the
        declared ones: where the formula has flat directions outside a range the data can inform
        (a break beyond the runs), the law bounds them and states why.

        Parameters
        ----------
        X : dict of str to ndarray
            The covariates of the fitted points by name, each shape (n,).

        Returns
        -------
        dict of str to (float, float)
            (lower, upper) by parameter name (empty: the declared bounds).
        """
        return {}

    def presolve(self, X: dict[str, np.ndarray], y: np.ndarray) -> dict[str, float]:
        """Parameters determined in closed form before the numerical search (held fixed).

        Parameters
        ----------
        X : dict of str to ndarray
            The covariates of the points by name, each shape (n,).
        y : ndarray
            The fitted target (target space), shape (n,).

        Returns
        -------
        dict of str to float
            The presolved parameters' values by name, natural units (empty: none).
        """
        return {}

    def presolve_weighted(self, X: dict[str, np.ndarray], y: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
        """The presolved parameters of many reweightings of the data at once (bootstrap replicates), where the law
        has a vectorised path.

        Parameters
        ----------
        X : dict of str to ndarray
            The covariates of the points by name, each shape (n,).
        y : ndarray
            The fitted target (target space), shape (n,).
        weights : ndarray
            How often each point is drawn, shape (B, n).

        Returns
        -------
        ndarray or None
            Shape (B, n_presolved) in the order of ``parameters`` (nan where a reweighting has none); None where
            each reweighting is presolved alone (:meth:`presolve`).
        """
        return None

    def initial_guesses(self, X: dict[str, np.ndarray], y: np.ndarray) -> np.ndarray:
        """Starting points; the default is each parameter's ``init``.

        Parameters
        ----------
        X : dict of str to ndarray
            The covariates of the points by name, each shape (n,).
        y : ndarray
            The fitted target (target space), shape (n,).

        Returns
        -------
        ndarray
            Starts in natural units, shape (S, n_params).
        """
        return np.array([[p.init for p in self.parameters]])

    def row_filter(self, rows) -> np.ndarray:
        """Why each design row is left out for the law's own reason beyond its score ('' where kept; none by default:
        the compute-optimal envelope keeps each budget's best run).

        Parameters
        ----------
        rows : pandas.DataFrame
            The rows a fit is given (``flops``, ``value``, ``k``).

        Returns
        -------
        ndarray of str
        """
        return np.full(len(rows), "", dtype=object)

    def point_filter(self, score: np.ndarray, q_rand: float, margin: float) -> np.ndarray:
        """Why each point cannot be used ('' where it can).

        Parameters
        ----------
        score : ndarray
            Observed scores in [0, 1].
        q_rand : float
            The benchmark's chance level, a score in [0, 1].
        margin : float
            Points with score <= ``q_rand + margin`` are dropped when the law uses a margin.

        Returns
        -------
        ndarray of str
            The reason for each point, same shape as ``score``.
        """
        score = np.asarray(score, float)
        reasons = np.full(score.shape, "", dtype=object)
        normed = normalise(score, q_rand)
        if self.target in ("neglog", "loglog"):
            reasons[normed <= 0] = f"at or below chance ({q_rand:g}): log undefined"
        if self.target == "loglog":
            reasons[normed >= 1] = "score 1: log(-log Q) undefined"
        if self.uses_margin:
            near = (score <= q_rand + margin) & (reasons == "")
            reasons[near] = f"score <= chance {q_rand:g} + {margin:g}"
        return reasons

    def margin_for(self, benchmark: str, override: float | None = None) -> float:
        """The near-chance filter margin this law uses on ``benchmark`` (``override`` wins).

        Parameters
        ----------
        benchmark : str
            The benchmark's name.
        override : float, optional
            A margin given by the caller, in score units.

        Returns
        -------
        float
            The margin, in score units.
        """
        if override is None and self.default_margin is not None:
            return float(self.default_margin)
        return filter_margin(benchmark, override)

    def predict_score(self, theta: np.ndarray, X: dict[str, np.ndarray], q_rand: float) -> np.ndarray:
        """The law's prediction as a score (clipped to [0, 1] where the law says so).

        Parameters
        ----------
        theta : ndarray
            Parameters in natural units, shape (..., n_params).
        X : dict of str to ndarray
            The covariates of the points by name, each shape (n,).
        q_rand : float
            The benchmark's chance level, a score in [0, 1].

        Returns
        -------
        ndarray
            Predicted scores, shape (..., n).
        """
        score = to_score(self.target, self.forward(np.asarray(theta, float), X), q_rand)
        return np.clip(score, 0.0, 1.0) if self.clip_scores else score

    def freeze(self, theta, q_rand: float = 0.0, **fixed) -> FittedLaw:
        """This law with its parameters fixed: an object that predicts and answers questions.

        Parameters
        ----------
        theta : array_like
            Parameters in natural units, shape (n_params,).
        q_rand : float
            The benchmark's chance level, a score in [0, 1].
        **fixed
            Settings a prediction needs, by name (e.g. the fitted ``k``).

        Returns
        -------
        FittedLaw
            The frozen law.
        """
        return FittedLaw(self, tuple(float(v) for v in np.asarray(theta, float)), float(q_rand), dict(fixed))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {self.formula}>"

"""The protocol of the Krajewski et al. 2025 reproduction: its benchmarks, laws, thresholds and
the text each of its tables and definitions carries (:mod:`benchcast.studies.krajewski2025`)."""

from __future__ import annotations

from benchcast.evaluation.critical import CRITICAL_DEFINITION
from benchcast.evaluation.sweep_result import SUCCESS_DEFINITION, SUCCESS_MRE
from benchcast.fitting.metrics import USABLE

BENCHMARKS = (
    ("arc_easy", "acc_norm"),
    ("arc_challenge", "acc_norm"),
    ("sciq", "acc_norm"),
    ("piqa", "acc_norm"),
    ("hellaswag", "acc_norm"),
    ("winogrande", "acc"),
    ("lambada_openai", "acc"),
    ("webqs_1shot", "exact_match"),
    ("triviaqa_1shot", "exact_match"),
    ("gsm8k_cot_llama", "exact_match"),
    ("humaneval-py", "pass@1"),
    ("lbpp", "pass@1"),
)
ACC_NORM = BENCHMARKS[:5]  # the paper's two-stage versus direct comparison (its Table 4)
GENERAL = BENCHMARKS[:7]
# K8: the paper's average is over every benchmark but GSM8K and LBPP
PAPER_AVERAGE = tuple(b for b in BENCHMARKS if b[0] not in ("gsm8k_cot_llama", "lbpp"))
AVERAGE_SETS = {"paper 10": PAPER_AVERAGE, "all 12": BENCHMARKS, "general 7": GENERAL}
AVERAGE_LOSS, AVERAGE_DELTA = "huber", 1e-3  # K8 is fitted like K2: on the Huber loss (the paper uses L-BFGS-B)

THRESHOLD, MIN_FLOPS, TPR = 6e21, 3e18, 20.0
BNSL = "bnsl"  # the paper's unrestricted BNSL (Table 3)
# The constrained BNSL variant (asymptote <= 1, non-decreasing), reported beside the paper's.
CONSTRAINED_BNSL = "bnsl_monotone"
# the authors' code fits BNSL to the points above chance on every benchmark (26 on DCLM LBPP): the reproduction's
# filter for both forms, where the package's own default keeps LBPP's margin of 0.02 (11 points, flagged)
BNSL_MARGIN = 0.0
DIRECT_LAWS = tuple(dict.fromkeys(("power", BNSL, CONSTRAINED_BNSL)))
INTERVAL_LAWS = DIRECT_LAWS
SWEEP_LAWS = ("power", BNSL)
TWO_STAGE_LAWS = ("two_stage_linear", "two_stage_logistic")
CORPUS_PROXIES = ("dclm:loss", "c4:loss", "fineweb:loss")

PROTOCOL = {
    "direct": "TPR 20; fit 3e18 <= C <= 6e21 with each law's point filter; test every TPR-20 run with C > 6e21",
    "bnsl": f"{BNSL!r} is the paper's unrestricted BNSL; {CONSTRAINED_BNSL!r} the constrained variant; both fitted to "
    "the points with Q > Q_rand on every benchmark, as the authors' code (LBPP included)",
    "two_stage": "as direct; proxies dclm:loss and the task's own -loglikelihood (where the task has one)",
    "nd": "protocol 2: all TPRs; test C > 6e21 or TPR 160; fit the rest (no lower compute bound)",
    "passk_compute": "protocol 3 on humaneval-py TPR-20 runs: fit C < 6e21 and k <= 32, test the rest",
    "average": "K8: mean Q' over a benchmark set per run, runs where every benchmark is >= its margin above chance; "
    "form of K1 fitted on the Huber loss (delta 1e-3; the paper: L-BFGS-B) in K1's space log(-log Q'); "
    "TPR 20, fit 3e18 <= C <= 6e21, test C > 6e21. The paper's set: the ten benchmarks other than "
    "GSM8K and LBPP; the other sets and the least-squares fit are named extras",
    "proxy": "K7: logistic link from proxy to score over every run (all TPRs)",
    "sweep": "protocol 4: thresholds 6e19..5e22 (13, log grid), TPR 20, C >= 3e18",
    "success": SUCCESS_DEFINITION.format(success_mre=SUCCESS_MRE),
    "critical_threshold": CRITICAL_DEFINITION,
    "usable": USABLE,
}
HEADLINE_ALL = "headline: test_mre, the MRE over every held-out point (SPEC §5); test_mre_usable beside it"
TABLES = {
    "direct": f"Direct laws per benchmark (held-out MAE, MRE, interval coverage); {HEADLINE_ALL}",
    "two_stage_paper": "The paper's Table 4: direct laws (power, BNSL) versus two-stage baselines, each averaged over "
    f"the five acc_norm benchmarks (ARC-E, ARC-C, SciQ, PIQA, HellaSwag); {HEADLINE_ALL}",
    "two_stage_all_benchmarks": "Wider comparison: every method that ran on all benchmarks of this reproduction, "
    "averaged over all of them (the task-loglikelihood proxy exists only where the task has a log-likelihood); "
    f"{HEADLINE_ALL}",
    "two_stage_per_benchmark": f"Every direct and two-stage backtest, one row per benchmark; {HEADLINE_ALL}",
    "nd": f"nd (K4), protocol 2 (test: C > 6e21 or TPR 160); {HEADLINE_ALL}",
    "passk_compute": f"passk_compute (K5) on HumanEval, protocol 3; {HEADLINE_ALL}",
    "power_floor": f"power_floor (K2): fitted ceiling and held-out error; {HEADLINE_ALL}",
    "average": "Benchmark average (K8): first row the paper's set (10 benchmarks, Huber loss); the rest named extras; "
    f"{HEADLINE_ALL}",
    "proxy": "Proxy diagnostics (K7): logistic link proxy -> score, R² and RMSE over every run",
    "sweep": "Threshold sweep (protocol 4), one row per threshold with held-out runs; "
    f"success uses test_mre < {SUCCESS_MRE:g} % (over the forecasts made) and at most 10 % of the held-out "
    "forecasts refused (n_refused: outside [0, 1], no number)",
    "critical_thresholds": "Critical threshold per law and benchmark (see protocol: success, critical_threshold)",
    "skipped": "Jobs and sweep thresholds that could not run, with the reason",
}

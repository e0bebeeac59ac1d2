"""The law registry: every law of SPEC §3, looked up by name."""

from benchcast.laws import bnsl, downstream, generative, tpr, two_stage_nd  # noqa: F401  (registers the laws)
from benchcast.laws.base import Law, Parameter, to_score
from benchcast.laws.parameters import COVARIATES
from benchcast.laws.registry import available_laws, get_law, register
from benchcast.laws.transforms import to_target

__all__ = ["COVARIATES", "Law", "Parameter", "available_laws", "get_law", "register", "to_score", "to_target"]

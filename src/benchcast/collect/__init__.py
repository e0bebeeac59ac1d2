"""Collecting the covariates the pass@k laws consume, from models (SPEC §7):
gold-reference log-likelihoods (:mod:`.scoring`) and graded samples (:mod:`.sampling`),
locally or sharded over Ray (:mod:`.distributed`). Needs the ``score`` extra (torch,
transformers); vLLM and Ray are optional backends."""

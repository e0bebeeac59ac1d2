"""Reading, validating and describing the tables of runs and scores.

:data:`FORMATS` lives here rather than in :mod:`benchcast.data.readers` so that the command line
declares ``--format`` without loading pandas.
"""

FORMATS = ("auto", "tidy", "apple", "lm-eval", "wandb")

"""One conversion of results to JSON-safe values, shared by artifacts and the CLI's --json."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def jsonable(value):
    """JSON-safe copy: nan/inf and pandas NA -> None, numpy scalars and arrays -> Python."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, pd.DataFrame):
        return jsonable(value.to_dict("records"))
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if value is pd.NA or value is pd.NaT:
        return None
    return value

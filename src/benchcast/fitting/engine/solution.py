"""Where each row of a batched solve ended (:func:`benchcast.fitting.engine.solver.solve`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Solution:
    """Where each row of a batched solve ended."""

    u: np.ndarray
    loss: np.ndarray
    converged: np.ndarray
    iterations: np.ndarray
    reason: np.ndarray

    def best_of_groups(self, n_groups: int) -> Solution:
        """The lowest-loss row of each of ``n_groups`` equal consecutive groups of rows (a replicate's starts); a
        converged row wins a tie."""
        per = len(self.loss) // n_groups
        loss, converged = self.loss.reshape(n_groups, per), self.converged.reshape(n_groups, per)
        # the lowest loss; among equal losses, a converged row (lexsort: its last key sorts first)
        rows = np.arange(n_groups) * per + np.lexsort((~converged, loss), axis=1)[:, 0]
        return self.take(rows)

    def take(self, rows) -> Solution:
        """The solution's rows ``rows``."""
        return Solution(self.u[rows], self.loss[rows], self.converged[rows], self.iterations[rows], self.reason[rows])

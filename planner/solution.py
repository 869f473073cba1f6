"""What a placement solve returns, and the solver model both ILP formulations start from.

Shared by :mod:`planner.ilp` (the plain formulation, eq. 11-13 as written) and :mod:`planner.compact`
(the signature formulation); :mod:`planner.hops` reads the :class:`Solution`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mip

from planner.views import Config

#: branch-and-bound nodes per MIP solve: the deterministic limit (wall time is only a safety net)
NODE_LIMIT = 2000


@dataclass
class Solution:
    """What a solve returned. ``status``: "optimal", "feasible" (time limit hit, incumbent kept),
    or "none" (no integer solution found; ``assignments`` empty)."""

    assignments: dict[str, Config | None]
    objective: float | None
    bound: float | None
    gap: float | None
    status: str
    solve_time: float
    n_vars: int
    n_int_vars: int
    n_constraints: int
    formulation: str
    solver: str
    extra: dict[str, object] = field(default_factory=dict)


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    if abs(bound) < 1e-12:
        return 0.0
    return max(bound - objective, 0.0) / abs(bound)


#: (job, signature) columns from which ``solver = "auto"`` solves a priced compact model with HiGHS
HIGHS_FROM = 200_000


def pick_solver(solver: str, priced: bool, columns: int = 0) -> str:
    """The solver a model is built with: ``solver`` itself unless it is "auto". "auto" is HiGHS for a compact
    model whose columns enter in pricing rounds (``priced``: :mod:`planner.columns`) and that has at least
    :data:`HIGHS_FROM` ``columns``, and CBC for every other model. At that size the LP re-solves after each
    round cost CBC seconds and HiGHS a third of it at the same LP optimum (16,384 GPUs, 636,633 columns: 7-9 s
    against 2.0-2.2 s); below it CBC keeps making the plans it always made (HiGHS there moves the rounded plan
    among plans of equal LP bound, and Table 4 seed 0 came out worse: docs/design.md, "Spans per speed bucket
    and column generation")."""
    if solver != "auto":
        return solver
    if priced and columns >= HIGHS_FROM:
        from mip import highs

        if highs.has_highs:
            return "HiGHS"
    return "CBC"


def new_model(solver: str, gap: float, threads: int) -> mip.Model:
    m = mip.Model(sense=mip.MAXIMIZE, solver_name=solver)
    m.verbose = 0
    m.max_mip_gap = gap
    m.max_mip_gap_abs = 1e-9
    m.threads = threads
    if solver == "CBC":
        # CBC's MIP preprocessing costs seconds on these models and finds little (measured: 2.2 s ->
        # 0.4 s on a 512-GPU round at the same gap); the pattern model is already tight
        m.preprocess = 0
    return m


def finish(m: mip.Model, status: mip.OptimizationStatus) -> tuple[str, float | None, float | None]:
    """(state, objective, bound) of a finished MIP solve, ``state`` as in :class:`Solution`."""
    if status == mip.OptimizationStatus.OPTIMAL:
        return "optimal", float(m.objective_value), float(m.objective_bound)
    if status == mip.OptimizationStatus.FEASIBLE:
        return "feasible", float(m.objective_value), float(m.objective_bound)
    bound = m.objective_bound if status == mip.OptimizationStatus.NO_SOLUTION_FOUND else None
    return "none", None, (float(bound) if bound is not None else None)

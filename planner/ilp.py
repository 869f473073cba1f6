"""The priority-weighted placement ILP (Hops eq. 11-13) with python-mip, in two exact formulations.

Last step of a planning: :mod:`planner.hops` hands in the window jobs' candidate configs
(:class:`Candidate`: job, concrete config, throughput gain G) and the eq. 11 weights; this module
returns a :class:`Solution` (job -> config or None) with objective, best bound, gap and sizes.

``plain`` is eq. 11-13 as written: one binary per candidate, ≤ 1 per job (eq. 12), per-node GPU
capacity (eq. 13). Its size grows with jobs × requirements × nodes.

``compact`` uses the structure of the problem: nodes of one server class are interchangeable (a
config's throughput depends on the server classes and GPU counts it uses, not on node names, which is
how the views define heterogeneity). A config becomes a *signature*, the multiset of its pieces
(GPUs on one node): a single-node config's piece is keyed by its server class (any node of the class
with room will do); a multi-node config's pieces by (class, free GPUs of the node), because the
paper's spanning configs fill each node but the last. One binary per (job, signature). Node
capacity is enforced exactly with packing patterns (Gilmore-Gomory) per group of nodes with the
same class and free GPUs: a pattern is a maximal multiset of piece sizes that fits one such node;
integer z[g, p] counts the group's nodes packed with pattern p (Σ_p z[g, p] ≤ |g|); multi-node
pieces of a size use at most the slots of that size their own group's patterns offer, and all pieces
of a class and size at most the slots of that size in all the class's groups (single-node pieces
take whatever slots of their class the multi-node ones leave). Any per-node packing is dominated by
maximal patterns and any pattern solution is realised node by node, so the optimum equals that of
the plain model over the candidate set closed under swapping interchangeable nodes (tests
cross-check this on random instances). The size depends on classes, free-GPU values and patterns,
not on node counts; its LP relaxation is tight, so the LP is solved first and rounded (a proof of the
gap against the LP bound), then LP dives, and branch and bound only when those fall short.

A running job's current config can have two partial pieces on nodes of one kind that would fit one
node together (placed by a fragment plan on idle GPUs, read by the round plan on wholly free nodes);
pattern counts alone would let them share a node, which no placement realises. Such a signature is
pinned to its own config's nodes: each of those nodes is a group of its own, and pieces are placed in
laminar eligible sets (pinned node ⊂ family of (type, class, free) ⊂ class), one constraint per set
and size, which keeps the model exact (:func:`shares_a_node`).

The solution is mapped back to concrete nodes so that running jobs keep their nodes
(:mod:`planner.keep`); signatures, packing patterns and the node packer live in
:mod:`planner.signatures`. Every solver limit here is deterministic (LP solves, a fixed number of
dives, a node limit for branch and bound); ``time_limit`` is only a safety net, and plans report
whether it was reached (``Solution.extra["time_limit_hit"]``).

The compact solve itself is :class:`planner.compact.CompactSolve` (named steps: build, solve, round,
branch); :mod:`planner.realise` maps its numbers back to nodes; :mod:`planner.solution` holds the
:class:`Solution` both formulations return.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping, Sequence

import mip

from planner.columns import COLUMNS
from planner.compact import STEPS, CompactSolve, StageTimer
from planner.keep import keep_equivalent, keep_running, keep_running_jobs, relabel_nodes
from planner.signatures import (BinKey, Candidate, Packer, Piece, Signature, maximal_patterns, moved, objective_of,
                                piece_key, shares_a_node, signature)
from planner.solution import NODE_LIMIT, Solution, finish, new_model, pick_solver, relative_gap
from planner.views import Config, NodeView

__all__ = ["NODE_LIMIT", "STEPS", "BinKey", "Candidate", "CompactSolve", "Packer", "Piece", "Signature", "Solution",
           "StageTimer", "keep_equivalent", "keep_running", "keep_running_jobs", "maximal_patterns", "moved",
           "objective_of", "piece_key", "relabel_nodes", "shares_a_node", "signature", "solve_compact", "solve_plain"]


def solve_plain(cands: Sequence[Candidate], weights: Mapping[str, float], capacity: Mapping[str, int], *,
                solver: str = "CBC", gap: float = 0.01, time_limit: float = 10.0, threads: int = 1,
                node_limit: int = NODE_LIMIT) -> Solution:
    """Eq. 11-13 with one binary per candidate config (the reference formulation); branch and bound
    stops after ``node_limit`` nodes (deterministic), ``time_limit`` is a safety net."""
    t0 = time.perf_counter()
    solver = pick_solver(solver, False)
    m = new_model(solver, gap, threads)
    xs = [m.add_var(var_type=mip.BINARY) for _ in cands]
    by_job: dict[str, list[int]] = defaultdict(list)
    by_node: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for k, c in enumerate(cands):
        by_job[c.job_id].append(k)
        for node, g in c.config.items():
            by_node[node].append((k, g))
    m.objective = mip.xsum(weights[c.job_id] * c.gain * xs[k] for k, c in enumerate(cands))
    for ks in by_job.values():
        m += mip.xsum(xs[k] for k in ks) <= 1  # eq. 12
    for node, uses in by_node.items():
        m += mip.xsum(g * xs[k] for k, g in uses) <= capacity[node]  # eq. 13
    status = m.optimize(max_seconds=time_limit, max_nodes=node_limit) if cands else mip.OptimizationStatus.OPTIMAL
    if not cands:
        return Solution({}, 0.0, 0.0, 0.0, "optimal", time.perf_counter() - t0, 0, 0, 0, "plain", solver)
    state, obj, bound = finish(m, status)
    assignments: dict[str, Config | None] = {j: None for j in by_job}
    if state != "none":
        for k, c in enumerate(cands):
            if xs[k].x is not None and xs[k].x >= 0.5:
                assignments[c.job_id] = c.config
    else:
        assignments = {}
    elapsed = time.perf_counter() - t0
    return Solution(assignments, obj, bound, relative_gap(obj, bound), state, elapsed,
                    m.num_cols, m.num_int, m.num_rows, "plain", solver,
                    extra={"time_limit_hit": elapsed >= time_limit})


def solve_compact(cands: Sequence[Candidate], weights: Mapping[str, float], nodes: Sequence[NodeView], *,
                  solver: str = "CBC", gap: float = 0.01, time_limit: float = 10.0, threads: int = 1,
                  current: Mapping[str, Config] | None = None, lp_rounding: bool = True,
                  dives: int = 4, node_limit: int = NODE_LIMIT, pin: frozenset[str] = frozenset(),
                  columns: int = COLUMNS, timer: StageTimer | None = None) -> Solution:
    """Eq. 11-13 over node-class signatures with exact packing patterns (see module docstring).

    With ``lp_rounding`` the LP relaxation is solved first and rounded (jobs by LP value, then the
    rest greedily); when the rounded plan is within ``gap`` of the LP bound that is a proof of the
    gap and no branch and bound runs; otherwise up to ``dives`` LP dives (fix the most decided
    fractional choices to 1, re-solve the LP, round again) and, failing those, the MIP, warm-started
    from the best plan found (at most ``node_limit`` nodes). The gap reported is always against a
    proven bound. ``pin``: running jobs whose current signature may only be realised on the nodes they
    hold (an equivalent placement elsewhere would be a restart for nothing). Every limit but
    ``time_limit`` (a safety net, reported as ``time_limit_hit``) is deterministic, so the same inputs
    give the same plan on any machine load. ``timer`` times the steps (:data:`STEPS`).
    """
    return CompactSolve(cands, weights, nodes, solver=solver, gap=gap, time_limit=time_limit, threads=threads,
                        current=current, lp_rounding=lp_rounding, dives=dives, node_limit=node_limit, pin=pin,
                        columns=columns, timer=timer).run()

"""The λ → ∞ limit of eq. 11: serve jobs in priority order, each its best feasible config.

Used by :mod:`planner.hops` as the last fallback when the ILP returns nothing in time, and by tests
and the benchmark as the reference for "large λ reproduces the greedy priority order".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from planner.ilp import Candidate, Packer
from planner.signatures import signature_on
from planner.views import Config, NodeView


def greedy_plan(order: Sequence[str], cands: Sequence[Candidate], capacity: Mapping[str, int],
                nodes: Sequence[NodeView] | None = None) -> dict[str, Config | None]:
    """Jobs in ``order`` (highest priority first) each take the feasible candidate with the largest
    gain G (ties: fewer GPUs, then fewer nodes, then candidate order) until nothing fits.

    With ``nodes`` a candidate stands for its whole signature (the compact model's view): when its
    own nodes are taken, the same pieces on other interchangeable nodes are tried."""
    left = dict(capacity)
    packer = Packer(nodes, left) if nodes is not None else None
    by_name = {n.name: n for n in nodes} if nodes is not None else {}
    by_job: dict[str, list[tuple[int, Candidate]]] = {job_id: [] for job_id in order}  # the jobs it places only
    for k, c in enumerate(cands):
        if (of_job := by_job.get(c.job_id)) is not None:
            of_job.append((k, c))
    out: dict[str, Config | None] = {}
    for job_id in order:
        ranked = sorted(by_job.get(job_id, []),
                        key=lambda kc: (-kc[1].gain, sum(kc[1].config.values()), len(kc[1].config), kc[0]))
        out[job_id] = None
        for _, c in ranked:
            if packer is not None:
                sig = signature_on(c, nodes, by_name)
                # (no config of a signature that cannot be placed fits, its own included)
                cfg = None if packer.cannot(sig) else packer.place(sig, c.config)
                if cfg is not None:
                    out[job_id] = cfg
                    break
            elif all(left.get(n, 0) >= g for n, g in c.config.items()):
                for n, g in c.config.items():
                    left[n] -= g
                out[job_id] = c.config
                break
    return out


def fill_leftovers(assignments: Mapping[str, Config | None], order: Sequence[str], cands: Sequence[Candidate],
                   capacity: Mapping[str, int], nodes: Sequence[NodeView] | None = None) -> dict[str, Config | None]:
    """Give jobs the solver left out (in ``order``) their best candidate that still fits.

    With large λ the lowest weights fall below the solvers' tolerances and such jobs can be left out
    although GPUs remain; every weight is positive, so this only raises eq. 11."""
    left = dict(capacity)
    for cfg in assignments.values():
        for n, g in (cfg or {}).items():
            left[n] = left.get(n, 0) - g
    rest = [j for j in order if not assignments.get(j)]
    out = dict(assignments)
    out.update({j: c for j, c in greedy_plan(rest, cands, left, nodes).items() if c})
    return out

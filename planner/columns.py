"""Column generation for the compact placement ILP: which (job, signature) columns the model starts with,
and which enter it against the LP duals.

Used by :func:`planner.ilp.solve_compact` between building the rows and rounding the LP. With every node
its own speed (:mod:`planner.entities`), a job has a column per entity class and requirement (and per
span), most of which no good plan uses: at 4096 GPUs and 877 window jobs that was 100,000 columns. The
model starts with each waiting job's :data:`COLUMNS` best columns by weighted gain (every column of a
running job, every pinned one) and every row any column touches; after each LP solve a column outside
the model whose reduced cost (weighted gain less the duals of its job's eq. 12 row and of the eq. 13
rows its pieces use) is positive enters, at most :data:`COLUMNS` per job and round. When none does, the
restricted LP's optimum is the full LP's (the LP optimality conditions hold for every column), so its
bound certifies the gap exactly as before; branch and bound, when it runs, searches the columns in the
model and reports the full LP bound. docs/design.md, "Spans per speed bucket and column generation".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Hashable, Mapping, Sequence

#: columns per waiting job the model starts with, and at most this many enter per job and pricing round
COLUMNS = 6
#: pricing rounds at most (each an LP re-solve from the previous basis); past it the LP bound is not proven
MAX_PRICING_ROUNDS = 50


def first_columns(keys: Sequence[tuple[str, Hashable]], gain_of: Mapping[tuple[str, Hashable], float], per_job: int,
                  current: Mapping[str, object],
                  pinned: Collection[tuple[str, Hashable]]) -> list[tuple[str, Hashable]]:
    """The columns the restricted model starts with: each waiting job's ``per_job`` best by weighted gain,
    every column of a running job (in ``current``) and every ``pinned`` one; in ``keys`` order."""
    by_job: dict[str, list[tuple[str, Hashable]]] = defaultdict(list)
    for k in keys:
        by_job[k[0]].append(k)
    keep: set[tuple[str, Hashable]] = set(pinned)
    for j, ks in by_job.items():
        keep.update(ks if j in current else sorted(ks, key=lambda k: -gain_of[k])[:per_job])
    return [k for k in keys if k in keep]


def price_columns(keys: Sequence[tuple[str, Hashable]], present: Collection[tuple[str, Hashable]],
                  rows: Mapping[tuple[str, Hashable], Mapping[object, float]],
                  gain_of: Mapping[tuple[str, Hashable], float], duals: Mapping[object, float],
                  per_job: int) -> list[tuple[str, Hashable]]:
    """The columns to add: outside ``present``, positive reduced cost gain - sum(coefficient x dual) over
    the rows the column uses (a row missing from ``duals`` has no room at all: the column never enters),
    the ``per_job`` most positive of each job."""
    best: dict[str, list[tuple[float, tuple[str, Hashable]]]] = defaultdict(list)
    for k in keys:
        if k in present:
            continue
        rc = gain_of[k]
        for row, coef in rows[k].items():
            pi = duals.get(row)
            if pi is None:
                rc = -1.0
                break
            rc -= coef * pi
        if rc > 1e-9 * max(1.0, abs(gain_of[k])):
            best[k[0]].append((rc, k))
    out: list[tuple[str, Hashable]] = []
    for cands in best.values():
        out.extend(k for _, k in sorted(cands, key=lambda t: -t[0])[:per_job])
    return out

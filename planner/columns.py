"""Column generation for the compact placement ILP: which (job, signature) columns the model starts with,
and which enter it against the LP duals.

Used by :func:`planner.ilp.solve_compact` between building the rows and rounding the LP. With every node
its own speed (:mod:`planner.entities`), a job has a column per entity class and requirement (and per
span), most of which no good plan uses: at 4096 GPUs and 877 window jobs that was 100,000 columns. The
model (from :data:`MIN_SIGNATURES` columns up) starts with each waiting job's :data:`COLUMNS` best columns by weighted gain (every column of a
running job, every pinned one) and every row any column touches; after each LP solve a column outside
the model whose reduced cost (weighted gain less the duals of its job's eq. 12 row and of the eq. 13
rows its pieces use) is positive enters, at most :data:`COLUMNS` per job and round. When none does, the
restricted LP's optimum is the full LP's (the LP optimality conditions hold for every column), so its
bound certifies the gap exactly as before; branch and bound, when it runs, searches the columns in the
model and reports the full LP bound. docs/design.md, "Spans per speed bucket and column generation".
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from operator import itemgetter

import numpy as np

#: columns per waiting job the model starts with, and at most this many enter per job and pricing round
COLUMNS = 6
#: models with fewer (job, signature) columns than this hold every column from the start (pricing rounds
#: are LP re-solves: on a small model they cost more than the columns they leave out)
MIN_SIGNATURES = 2000
#: pricing rounds at most (each an LP re-solve from the previous basis); past it the LP bound is not proven
MAX_PRICING_ROUNDS = 50


def first_columns(keys: Sequence[tuple[str, Hashable]],
                  gain_of: Mapping[tuple[str, Hashable], float] | Sequence[float], per_job: int,
                  current: Mapping[str, object],
                  pinned: Collection[tuple[str, Hashable]]) -> list[tuple[str, Hashable]]:
    """The columns the restricted model starts with: each waiting job's ``per_job`` best by weighted gain
    (``gain_of``: per key, or a list in ``keys`` order), every column of a running job (in ``current``) and
    every ``pinned`` one; in ``keys`` order."""
    return [keys[i] for i in first_positions(keys, gain_of, per_job, current, pinned)]


def job_numbers(keys: Sequence[tuple[str, Hashable]]) -> tuple[dict[str, int], np.ndarray]:
    """Each job's number (in the order ``keys`` first name it) and each key's job as that number."""
    ids = list(map(itemgetter(0), keys))  # (C loops over the keys: there are hundreds of thousands)
    jobs = {j: n for n, j in enumerate(dict.fromkeys(ids))}
    return jobs, np.fromiter(map(jobs.__getitem__, ids), dtype=np.int64, count=len(ids))


def first_positions(keys: Sequence[tuple[str, Hashable]],
                    gain_of: Mapping[tuple[str, Hashable], float] | Sequence[float], per_job: int,
                    current: Mapping[str, object], pinned: Collection[tuple[str, Hashable]],
                    numbers: tuple[dict[str, int], np.ndarray] | None = None) -> list[int]:
    """:func:`first_columns` as positions in ``keys`` (ascending); ``numbers``: :func:`job_numbers` of
    ``keys`` when the caller has them."""
    gains = [gain_of[k] for k in keys] if isinstance(gain_of, Mapping) else gain_of
    if not keys:
        return []
    jobs, job = numbers if numbers is not None else job_numbers(keys)
    idx = np.arange(len(keys))
    # by job, best gain first, then position (a stable sort of each job's positions by -gain)
    order = np.lexsort((idx, -np.asarray(gains, dtype=float), job))
    ordered = job[order]
    start = np.maximum.accumulate(np.where(np.r_[True, ordered[1:] != ordered[:-1]], idx, 0))
    keep = np.zeros(len(keys), dtype=bool)
    keep[order[idx - start < per_job]] = True
    running = [n for j, n in jobs.items() if j in current]
    if running:
        keep |= np.isin(job, running)
    if pinned:
        pins = set(pinned)
        keep |= np.array([k in pins for k in keys], dtype=bool)
    return np.nonzero(keep)[0].tolist()  # type: ignore[no-any-return]


class Pricer:
    """Reduced costs of every column at once (numpy over the column-row incidence, built once per solve)."""

    def __init__(self, keys: Sequence[tuple[str, Hashable]], rows: Mapping[tuple[str, Hashable], Mapping[object, float]],
                 gain_of: Mapping[tuple[str, Hashable], float]) -> None:
        self.keys = list(keys)
        self._index: dict[tuple[str, Hashable], int] | None = None
        self.row_ids: dict[object, int] = {}
        cols: list[int] = []
        rids: list[int] = []
        coefs: list[float] = []
        for i, k in enumerate(self.keys):
            for row, coef in rows[k].items():
                cols.append(i)
                rids.append(self.row_ids.setdefault(row, len(self.row_ids)))
                coefs.append(float(coef))
        self.cols = np.array(cols, dtype=np.int64)
        self.rids = np.array(rids, dtype=np.int64)
        self.coefs = np.array(coefs, dtype=float)
        self.gain = np.array([gain_of[k] for k in self.keys], dtype=float)
        jobs = {j: n for n, j in enumerate(dict.fromkeys(k[0] for k in self.keys))}
        self.job = np.array([jobs[k[0]] for k in self.keys], dtype=np.int64)
        self.present = np.zeros(len(self.keys), dtype=bool)
        self._shared: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    @classmethod
    def shared(cls, keys: Sequence[tuple[str, Hashable]], templates: Sequence[Mapping[object, float]],
               template_of: Sequence[int],
               gain_of: Mapping[tuple[str, Hashable], float] | Sequence[float],
               numbers: tuple[dict[str, int], np.ndarray] | None = None) -> Pricer:
        """A pricer for columns whose rows are their job's row (coefficient 1, first) and then the rows of a
        template many columns share (``templates[template_of[i]]`` for ``keys[i]``): the incidence is built
        per template, not per column, and the reduced costs come out as :meth:`enter` computes them for
        ``rows[k] = {k[0]: 1.0, **template}`` (the same additions in the same order). ``numbers``:
        :func:`job_numbers` of ``keys`` when the caller has them."""
        self = cls.__new__(cls)
        self.keys = list(keys)
        self._index = None
        self.row_ids = {}
        jobs, job = numbers if numbers is not None else job_numbers(self.keys)
        job_rows = np.array([self.row_ids.setdefault(j, len(self.row_ids)) for j in jobs], dtype=np.int64)
        width = max((len(t) for t in templates), default=0)
        pad = len(self.row_ids)  # a row of its own with dual 0: padding adds 0.0
        self.row_ids[("pricer padding",)] = pad
        rids = np.full((len(templates), width), pad, dtype=np.int64)
        coefs = np.zeros((len(templates), width), dtype=float)
        for t, template in enumerate(templates):
            for p, (row, coef) in enumerate(template.items()):
                rids[t, p] = self.row_ids.setdefault(row, len(self.row_ids))
                coefs[t, p] = float(coef)
        self.gain = np.array([gain_of[k] for k in self.keys] if isinstance(gain_of, Mapping) else gain_of, dtype=float)
        self.job = job
        self.present = np.zeros(len(self.keys), dtype=bool)
        self._shared = (job_rows, rids, coefs, np.asarray(template_of, dtype=np.int64))
        return self

    def _costs(self, pi: np.ndarray) -> np.ndarray:
        """Each column's sum of coefficient x dual over its rows, added in its rows' order."""
        if self._shared is None:
            return np.bincount(self.cols, weights=self.coefs * pi[self.rids], minlength=len(self.keys))
        job_rows, rids, coefs, template_of = self._shared
        cost = 0.0 + 1.0 * pi[job_rows][self.job]
        per_template = coefs * pi[rids]
        for p in range(per_template.shape[1]):
            cost = cost + per_template[:, p][template_of]
        return cost  # type: ignore[no-any-return]

    @property
    def index(self) -> dict[tuple[str, Hashable], int]:
        """Each column's position (worked out when first asked: callers that know positions never need it)."""
        if self._index is None:
            self._index = {k: i for i, k in enumerate(self.keys)}
        return self._index

    def add(self, key: tuple[str, Hashable]) -> None:
        """``key`` is in the model now."""
        self.present[self.index[key]] = True

    def add_at(self, positions: Sequence[int]) -> None:
        """The columns at these positions are in the model now."""
        self.present[np.asarray(positions, dtype=np.int64)] = True

    def enter(self, duals: Mapping[object, float], per_job: int) -> list[tuple[str, Hashable]]:
        """The columns to add: outside the model, positive reduced cost gain - sum(coefficient x dual) over
        the rows the column uses (a row missing from ``duals`` has no room at all: the column never enters),
        the ``per_job`` most positive of each job, in key order within a job's picks."""
        keys = self.keys
        return [keys[i] for i in self.enter_at(duals, per_job)]

    def enter_at(self, duals: Mapping[object, float], per_job: int) -> list[int]:
        """:meth:`enter` as positions."""
        pi = np.full(len(self.row_ids), np.inf)
        for row, i in self.row_ids.items():
            value = duals.get(row)
            if value is not None:
                pi[i] = value
        if self._shared is not None:
            pi[self.row_ids[("pricer padding",)]] = 0.0
        cost = self._costs(pi)
        rc = self.gain - cost
        ok = ~self.present & (rc > 1e-9 * np.maximum(1.0, np.abs(self.gain)))
        idx = np.nonzero(ok)[0]
        if not len(idx):
            return []
        order = idx[np.lexsort((idx, -rc[idx], self.job[idx]))]  # by job, best reduced cost first
        # each job's entries are contiguous in that order: its first per_job ones enter
        job = self.job[order]
        at = np.arange(len(order))
        start = np.maximum.accumulate(np.where(np.r_[True, job[1:] != job[:-1]], at, 0))
        return order[at - start < per_job].tolist()  # type: ignore[no-any-return]


def price_columns(keys: Sequence[tuple[str, Hashable]], present: Collection[tuple[str, Hashable]],
                  rows: Mapping[tuple[str, Hashable], Mapping[object, float]],
                  gain_of: Mapping[tuple[str, Hashable], float], duals: Mapping[object, float],
                  per_job: int) -> list[tuple[str, Hashable]]:
    """:meth:`Pricer.enter` once, for callers that price a single time."""
    pricer = Pricer(keys, rows, gain_of)
    for k in present:
        pricer.add(k)
    return pricer.enter(duals, per_job)

"""Honest declarations pay: the age a job gets from what it declared, what it did and its owner's past.

Where it sits: the latency-ratio priority divides a job's wait by its age (eq. 6), and the age (eq. 9)
is made from the ``samples=`` its owner declares. Nothing but this module checks that declaration. The
live engine (:mod:`hops_slurm.engine.honesty_review`) and the simulator (:mod:`hops_slurm.sim.sim_backend`) both
call :func:`assess` once per job and planning with

- the job's declared samples and the eq. 9 age made from them,
- the samples it has processed so far (measured: runtime records, or elapsed time x measured
  throughput; in simulation its progress),
- its owner's :class:`UserHistory` (:func:`history_of` over the user's ended and running jobs),

and plan with the age it returns. Pure: no Slurm, no wall clock, no I/O.

Rules (the defaults are :class:`HonestyParams`'s):

1. **Re-aging from what was done.** A job that has processed more than ``(1 + tolerance)`` times its
   declaration is aged as if it will process ``(1 + headroom)`` times what it has done so far (it has
   shown the declaration wrong; nothing better is known of its end). Eq. 9 is linear in the samples,
   so the age scales by the same factor.
2. **History.** Every (ended or running) job of the user has a ratio processed / declared. Ratios up
   to ``1 + tolerance`` count as 1 (honest underestimates of a few percent are forgiven); the factor
   of the user's next jobs is the largest ratio of the last ``history_jobs`` jobs, capped at
   ``history_cap``. It is never below 1: a user who overstates (a job that ends early) gets no
   penalty beyond the lower priority of its own larger age.
3. **Verdict.** ``ok``, ``reaged`` (rule 1 applied, within ``margin``) or ``exceeded`` (processed more
   than ``(1 + margin)`` times the declaration): what the site does then (nothing, a warning, an end
   of the job's Hops treatment) is the caller's, from ``hops.toml``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

OK, REAGED, EXCEEDED = "ok", "reaged", "exceeded"


@dataclass(frozen=True)
class HonestyParams:
    """``enabled`` False: the declared age is used as is (the defences off; verdicts still computed)."""

    enabled: bool = True
    tolerance: float = 0.05  # processed / declared up to 1 + tolerance is honest
    headroom: float = 1.0  # a job past its declaration: aged for (1 + headroom) x what it did
    margin: float = 1.0  # processed > (1 + margin) x declared: verdict "exceeded"
    history_jobs: int = 20  # the user's last N jobs count
    history_cap: float = 1000.0  # bound on the history factor

    def __post_init__(self) -> None:
        for name in ("tolerance", "headroom", "margin", "history_cap"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value}")
        if self.history_cap < 1:
            raise ValueError(f"history_cap must be >= 1, got {self.history_cap}")
        if self.history_jobs < 0:
            raise ValueError(f"history_jobs must be >= 0, got {self.history_jobs}")


@dataclass(frozen=True)
class JobOutcome:
    """One job of a user for the history: declared and processed samples (so far, if it still runs)."""

    declared: float
    processed: float


@dataclass(frozen=True)
class UserHistory:
    """The history factor of one user and the jobs it came from."""

    factor: float = 1.0  # >= 1; multiplies the age of the user's jobs
    jobs: int = 0  # jobs that counted
    worst_ratio: float = 0.0  # largest processed / declared among them (before tolerance and cap)

    def describe(self) -> str:
        if not self.jobs:
            return "no history"
        return f"x{self.factor:.3g} (worst ratio {self.worst_ratio:.3g} of {self.jobs} jobs)"


@dataclass(frozen=True)
class Verdict:
    """What :func:`assess` decided for one job: the age to plan with and why."""

    age: float
    verdict: str  # OK, REAGED or EXCEEDED
    ratio: float  # processed / declared so far
    factor: float  # age / declared age
    reason: str  # one line for the owner (Comment, queue); "" when nothing to say


def ratio(declared: float, processed: float) -> float:
    """processed / declared (a declaration of 0 samples that processed any counts as infinitely over)."""
    if not (math.isfinite(declared) and math.isfinite(processed)):
        raise ValueError(f"samples must be finite, got declared={declared}, processed={processed}")
    if declared <= 0:
        return math.inf if processed > 0 else 1.0
    return max(processed, 0.0) / declared


def history_of(outcomes: Iterable[JobOutcome], params: HonestyParams) -> UserHistory:
    """Rule 2 over a user's jobs, oldest first (only the last ``params.history_jobs`` count)."""
    items = list(outcomes)
    recent = items[max(0, len(items) - params.history_jobs):] if params.history_jobs else []
    if not recent:
        return UserHistory()
    worst = max(ratio(o.declared, o.processed) for o in recent)
    factor = 1.0 if worst <= 1.0 + params.tolerance else min(worst, params.history_cap)
    return UserHistory(factor=factor, jobs=len(recent), worst_ratio=worst)


def assess(declared: float, processed: float, declared_age: float, history: UserHistory,
           params: HonestyParams) -> Verdict:
    """Rules 1-3 for one job (see the module docstring). ``declared_age``: eq. 9 at ``declared``."""
    r = ratio(declared, processed)
    factor = history.factor if params.enabled else 1.0
    reasons = []
    verdict = OK
    if r > 1.0 + params.tolerance:
        verdict = EXCEEDED if r > 1.0 + params.margin else REAGED
        if params.enabled:
            grown = processed * (1.0 + params.headroom) / declared if declared > 0 else math.inf
            factor = max(factor, min(grown, params.history_cap * (1.0 + params.headroom)))
        reasons.append(f"processed {processed:.4g} samples, {r:.3g}x its declared {declared:.4g}")
    if params.enabled and history.factor > 1.0:
        reasons.append(f"owner's history {history.describe()}")
    age = declared_age * factor if math.isfinite(factor) else math.inf
    if params.enabled and factor > 1.0 and math.isfinite(declared_age):
        reasons.append(f"age x{factor:.3g}")
    return Verdict(age=age, verdict=verdict, ratio=r, factor=factor, reason="; ".join(reasons))


__all__ = ["HonestyParams", "JobOutcome", "UserHistory", "Verdict", "assess", "history_of", "ratio",
           "OK", "REAGED", "EXCEEDED"]

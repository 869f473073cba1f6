"""No take-back: a job a round plan requeued does not take its GPUs back from the job started on them.

Where it sits: the ``take_back`` stage of :class:`planner.hops.HopsPolicy` (round plans only, after ``swaps``,
before ``outcome``), with the policy's memory of who was requeued for whom (:data:`Displaced`), which the
``outcome`` stage of each round plan adds to (:func:`note_requeues`).

Why (docs/results/starvation.md, "Two jobs taking turns"): the queue's priority is the latency ratio, which
grows while a job waits and stands still while it runs. When a round plan requeues job A to start job B on
A's GPUs, A's ratio passes B's a round later, and with nothing else to tell them apart the next round plan
gives the GPUs back to A, then to B again. On ``odd-23`` under ``gavel:jobs=60,rate=6`` (seed 1) two 8-GPU
jobs, each expected to run for 35 h, took turns on the only 8 GPUs that fit them for 178 rounds: 457
preemptions for 60 jobs. The head's override kept that from happening while it was on (the started head kept
an overriding weight); with it off (``head_override``) nothing did.

The rule: once a round plan has requeued one job of a pair for the other twice in all (B for A, then A for B:
each has had one turn), a later round plan that places the waiting one on any node of the config the other
started in, while that one still holds it, and does not keep the other where it was, is changed back: the
running job keeps its config and the waiting one waits, where the plan's capacity allows it (another job
placed on those GPUs as well leaves the plan as it is). Nothing else in the plan moves, and the waiting job
may start anywhere else. The first take-back is let through: undoing every take-back (from the first) made
Table 3's seed 2 9.8 % slower in avg JCT. The memory of a requeue is forgotten once the requeued job runs
again, leaves, or the other leaves its config; a pair's count once either job leaves. Pure: no clock, no Slurm.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from planner.views import Config, JobView, freeze_config

#: how many times a round plan has requeued one job of a pair for the other (both ways, in all) before a
#: take-back between them is undone: the first take-back is let through, the turn after it is not
TURNS = 2

#: requeued job id -> {id of a job started on its GPUs in that round plan: that job's config then}
Displaced = dict[str, dict[str, dict[str, int]]]


def forget_stale(book: Displaced, jobs: Sequence[JobView]) -> None:
    """Drop (in place) what no longer holds: the requeued job runs again or left, the started job left its
    config."""
    current = {j.job_id: j.current for j in jobs if j.current}
    ids = {j.job_id for j in jobs}
    for requeued in list(book):
        kept = {started: cfg for started, cfg in book[requeued].items()
                if (now := current.get(started)) is not None and dict(now) == cfg}
        if not kept or requeued in current or requeued not in ids:
            del book[requeued]
        else:
            book[requeued] = kept


def keep_started(book: Displaced, chosen: Mapping[str, Config | None], held: Mapping[str, str],
                 fits: Callable[[Mapping[str, Config | None]], bool],
                 turns: Mapping[frozenset[str], int] | None = None) -> tuple[dict[str, Config | None], dict[str, str]]:
    """``chosen`` with each take-back undone where ``fits`` allows (module docstring); and started job id ->
    the requeued job kept from taking its GPUs back. ``turns``: only for pairs that have requeued each other
    at least this many times in all (None: every pair)."""
    out = dict(chosen)
    kept: dict[str, str] = {}
    for requeued, starters in book.items():
        placed = out.get(requeued)
        if not placed:
            continue
        for started, cfg in starters.items():
            now = out.get(started)
            if started in held or (now is not None and dict(now) == cfg) or not set(placed) & set(cfg):
                continue
            if turns is not None and turns.get(frozenset((requeued, started)), 0) < TURNS:
                continue
            trial = {**out, requeued: None, started: freeze_config(cfg)}
            if fits(trial):
                out, kept[started] = trial, requeued
                break
    return out, kept


def note_requeues(book: Displaced, running: Sequence[JobView], planned: Sequence[JobView],
                  assignments: Mapping[str, Config | None], turns: dict[frozenset[str], int] | None = None) -> None:
    """Add (in place) a round plan's requeues: each running job it leaves waiting -> the waiting jobs it
    starts on any of that job's nodes, with their configs; ``turns`` counts them per pair of jobs."""
    started = {j.job_id: dict(cfg) for j in planned if not j.current and (cfg := assignments.get(j.job_id))}
    for job in running:
        if not job.current or assignments.get(job.job_id):
            continue
        for sid, cfg in started.items():
            if set(job.current) & set(cfg):
                book.setdefault(job.job_id, {})[sid] = cfg
                if turns is not None:
                    pair = frozenset((job.job_id, sid))
                    turns[pair] = turns.get(pair, 0) + 1


def forget_pairs(turns: dict[frozenset[str], int], jobs: Sequence[JobView]) -> None:
    """Drop (in place) the pairs with a job that has left."""
    ids = {j.job_id for j in jobs}
    for pair in [p for p in turns if not p <= ids]:
        del turns[pair]


__all__ = ["Displaced", "TURNS", "forget_pairs", "forget_stale", "keep_started", "note_requeues"]

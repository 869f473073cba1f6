"""Settling a start (:meth:`hops_slurm.slurm.enact.Enactor._await_start`) against a scripted Slurm: when
the started job's node never shows the expected GPU count (another job on it ended meanwhile), the job
listing answers after :data:`~hops_slurm.slurm.enact.SETTLE_ASK_AFTER` instead of the whole settle
timeout, and that answer is the round's second (last) read of the listing."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace

from hops_slurm.slurm import enact
from hops_slurm.slurm.enact import Enactor
from hops_slurm.slurm.snapshot import Snapshot


@dataclass
class Node:
    name: str
    gpus_total: int
    gpus_used: tuple[int, ...]


@dataclass
class Job:
    job_id: str
    active: bool
    config: dict[str, int] = field(default_factory=dict)

    def gpu_config(self) -> dict[str, int]:
        return dict(self.config)


class ScriptedSlurm:
    """n1 has 8 GPUs; job 7 was released onto 2 of them. ``starts_after``: seconds until Slurm lists job 7
    running; ``node_counts``: whether n1's GPU count then shows it (False: another job on n1 ended)."""

    def __init__(self, starts_after: float, node_counts: bool) -> None:
        self.t0, self.starts_after, self.node_counts = time.monotonic(), starts_after, node_counts
        self.calls: Counter[str] = Counter()

    def running(self) -> bool:
        return time.monotonic() - self.t0 >= self.starts_after

    def nodes(self) -> list[Node]:
        self.calls["nodes"] += 1
        used = 2 if self.running() and self.node_counts else 0
        return [Node("n1", 8, tuple(range(used)))]

    def jobs(self) -> list[Job]:
        self.calls["jobs"] += 1
        return [Job("7", True, {"n1": 2})] if self.running() else [Job("7", False)]


def settle(api: ScriptedSlurm, timeout: float = 6.0) -> tuple[Snapshot, float]:
    me = SimpleNamespace(api=api, settle_timeout=timeout, poll=0.05, planned_config=lambda j: {"n1": 2})
    t0 = time.monotonic()
    snap = Enactor._await_start(me, ["7"], Snapshot(), {"n1": 6})  # type: ignore[arg-type]
    return snap, time.monotonic() - t0


def test_a_start_the_node_count_shows_reads_the_job_listing_once() -> None:
    api = ScriptedSlurm(starts_after=0.2, node_counts=True)
    snap, _ = settle(api)
    assert api.calls["jobs"] == 1
    assert [j.job_id for j in snap.jobs if j.active] == ["7"]


def test_a_start_hidden_by_another_jobs_end_is_answered_by_the_listing_not_the_timeout() -> None:
    api = ScriptedSlurm(starts_after=0.2, node_counts=False)
    snap, took = settle(api, timeout=6.0)
    assert took < enact.SETTLE_ASK_AFTER + 1.5  # not the 6 s timeout
    assert api.calls["jobs"] == 1  # the read that answered is the snapshot's: no third read of the listing
    assert [j.job_id for j in snap.jobs if j.active] == ["7"]


def test_a_job_not_started_yet_is_asked_about_at_most_once_a_second() -> None:
    api = ScriptedSlurm(starts_after=60.0, node_counts=False)
    _, took = settle(api, timeout=3.0)
    assert took >= 3.0
    asked_in_loop = api.calls["jobs"] - 1  # the last read makes the snapshot
    assert 1 <= asked_in_loop <= 2  # at 1.5 s and 2.5 s, not at every 50 ms poll

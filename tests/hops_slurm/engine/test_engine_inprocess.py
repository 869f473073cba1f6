"""The engine's round, crash points and recovery in-process, without root: the live engine (refresh, plan,
enactment, settle, reconcile) against the stand-in slurmctld that starts released jobs
(:class:`standin.StandInSlurm` with ``starts=True``).

The same questions as the live tests ``test_engine_calls_live.py`` (Slurm reads per placing round) and
``test_engine_faults_live.py::test_sigkill_at_every_journaled_step_loses_nothing`` (a crash at every kind
of journaled step, after Slurm carried it out and before), asked of the engine's own logic in seconds; the
live ones stay for what only Slurm can show (its scheduler, its requeue, a real SIGKILL).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.config import parse_config
from hops_slurm.engine.crashpoints import CRASH_AT_ENV, CrashingJournal
from hops_slurm.engine.engine import Engine
from hops_slurm.journal import Journal
from hops_slurm.slurm.snapshot import GATE, job_reservation
from standin import StandInSlurm

JOB = "gpus=1,2 samples=1000 batch-size=8 model=resnet18"
#: every kind of journaled step a placement meets (as in the live fault test), after and before
CHAIN = [("hold", "after"), ("reserve", "before"), ("reserve", "after"), ("place", "before"), ("place", "after"),
         ("env", "after"), ("release", "before"), ("release", "after"), ("detach", "after"),
         ("unreserve", "after"), ("gate", "after")]


class Crashed(BaseException):
    """The process ended at a crash point (a BaseException: nothing in the engine catches it)."""


def _engine(tmp_path: Path, api: StandInSlurm) -> Engine:
    config = parse_config({"engine": {"settle_timeout": 0.5, "probe_size": "tiny"},
                           "paths": {"state_dir": str(tmp_path / "state")}})
    engine = Engine(config, api=api).open()
    assert engine.state is not None
    engine.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])  # profiled: no probe job
    return engine


def _submit(api: StandInSlurm, n: int, first: int = 1) -> list[str]:
    ids = [str(i) for i in range(first, first + n)]
    for j in ids:
        api.submit(j, JOB)
    return ids


def check_consistent(api: StandInSlurm, jobs: list[str], journal: Path, *, settled: bool = True) -> None:
    """No job lost, no stray hold or reservation, nothing left open in the journal (the live test's check).
    Not ``settled`` (right after recovery): a job may have started in its reservation, not yet detached."""
    listed = [j for j in api.jobs() if j.job_id in jobs]
    assert sorted(j.job_id for j in listed) == sorted(jobs)
    by_id = {j.job_id: j for j in listed}
    for j in listed:
        assert j.state == "RUNNING" or j.pending, j
        if j.pending and j.reservation != job_reservation(j.job_id):
            assert j.held and j.reason == "JobHeldAdmin", j
    names = {r.name for r in api.reservations()}
    assert GATE in names
    assert all(j.reservation in names for j in listed if j.reservation), [(j.job_id, j.reservation) for j in listed]
    for name in names - {GATE}:
        owner = by_id.get(name.removeprefix("hops-j"))
        assert owner is not None and (owner.pending or not settled) and not owner.held and owner.reservation == name, \
            (name, owner)
    assert not Journal(journal).open_actions()


def test_a_placing_round_reads_the_job_listing_at_most_twice_and_verifies_the_start(tmp_path: Path) -> None:
    api = StandInSlurm(starts=True)
    jobs = _submit(api, 2)
    engine = _engine(tmp_path, api)
    try:
        engine.refresh()  # holds the new jobs (not the measured round)
        for k in api.reads:
            api.reads[k] = 0
        planning = engine.full_round()
        assert planning is not None and set(planning.plan.placed()) == set(jobs)
        assert api.reads["jobs"] <= 2 and api.reads["job"] == 0, api.reads
        res = engine.backend.last_result  # type: ignore[union-attr]
        assert res is not None and sorted(res.started) == jobs and sorted(res.verified) == jobs
        for j in jobs:  # running on exactly the planned GPUs, its reservation gone
            assert api.get(j).gpu_config() == dict(planning.plan.assignments[j] or {})
        assert {r.name for r in api.reservations()} == {GATE}
        engine.refresh()  # the accounting sees them run on those configs
        assert all(engine.tracked[j].config == api.get(j).gpu_config() for j in jobs)
    finally:
        engine.close()


def test_a_round_plan_is_followed_by_fragment_plans_at_the_same_instant(tmp_path: Path) -> None:
    api = StandInSlurm(starts=True)
    _submit(api, 2)
    engine = _engine(tmp_path, api)
    try:
        engine.refresh()
        engine.round()
        rows = engine.state.meta("last_fragment", "")  # type: ignore[union-attr]
        # the round plan placed every job: the follow-up found nobody to place and recorded nothing
        assert rows == ""
        _submit(api, 1, first=3)
        engine.refresh()
        first = engine.round(fragment=True)  # a refresh tick: a fragment plan places the new job
        assert first is not None and "3" in first.plan.placed()
    finally:
        engine.close()


@pytest.mark.parametrize(("kind", "when"), CHAIN)
def test_a_crash_at_a_journaled_step_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str,
                                                  when: str) -> None:
    api = StandInSlurm(starts=True)
    jobs = _submit(api, 2)

    def crash(self: CrashingJournal, what: str) -> None:
        raise Crashed(what)

    monkeypatch.setattr(CrashingJournal, "_crash", crash)
    monkeypatch.setenv(CRASH_AT_ENV, f"{kind}:before" if when == "before" else kind)
    engine = Engine(parse_config({"engine": {"settle_timeout": 0.5, "probe_size": "tiny"},
                                  "paths": {"state_dir": str(tmp_path / "state")}}), api=api)
    crashed = ""
    try:
        engine.open()
        assert engine.state is not None
        engine.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])
        for round_no in range(4):
            if round_no == 2:
                jobs += _submit(api, 1, first=3)  # something new to hold and place after the first starts
            engine.full_round()
    except Crashed as exc:
        crashed = str(exc)
    finally:
        engine.close()  # the process is gone: its connections closed without commit, its lock released
    assert crashed, f"never reached {kind} ({when})"
    listed = [j.job_id for j in api.jobs() if j.job_id in jobs and (j.pending or j.active)]
    assert sorted(listed) == sorted(jobs), f"a job was lost at {kind} ({when})"
    monkeypatch.delenv(CRASH_AT_ENV)
    engine = _engine(tmp_path, api)  # the restart: reconciles the journal with Slurm, then plans on
    check_consistent(api, jobs, tmp_path / "state" / "journal.sqlite", settled=False)  # repaired before any round
    try:
        for _ in range(3):
            engine.full_round()
    finally:
        engine.close()
    check_consistent(api, jobs, tmp_path / "state" / "journal.sqlite")
    assert all(api.get(j).state == "RUNNING" for j in jobs), [(j, api.get(j).state, api.get(j).reason) for j in jobs]
    assert {r.name for r in api.reservations()} == {GATE}


def test_a_round_placing_many_jobs_batches_slurm_and_the_journal_by_phase(tmp_path: Path) -> None:
    api = StandInSlurm(starts=True, nodes=4, gpus_per_node=2)
    jobs = _submit(api, 6)
    engine = _engine(tmp_path, api)
    try:
        engine.refresh()
        assert engine.journal is not None
        calls, commits = len(api.calls), engine.journal.commits
        planning = engine.round()
        assert planning is not None
        placed = sorted(planning.plan.placed())
        assert len(placed) >= 4
        kinds = [c[0] for c in api.calls[calls:]]
        # per placement: its reservation and one update (placement + attach); one release for all of them;
        # after the start: one detach for all, one reservation delete each
        assert kinds.count("release") == 1 and kinds.count("create_reservation") == len(placed)
        assert kinds.count("delete_reservation") == len(placed)
        updates = [c for c in api.calls[calls:] if c[0] == "update"]
        assert len(updates) == len(placed) + 1 and updates[-1][1] == ",".join(placed) and updates[-1][2] == "Reservation="
        # the journal: one transaction per phase (reserve, place, env, release; detach, unreserve,
        # allocations), however many jobs
        assert engine.journal.commits - commits <= 16
    finally:
        engine.close()
    check_consistent(api, jobs, tmp_path / "state" / "journal.sqlite")


def test_a_crash_in_a_phase_of_several_jobs_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    api = StandInSlurm(starts=True, nodes=4, gpus_per_node=2)
    jobs = _submit(api, 4)

    def crash(self: CrashingJournal, what: str) -> None:
        raise Crashed(what)

    monkeypatch.setattr(CrashingJournal, "_crash", crash)
    monkeypatch.setenv(CRASH_AT_ENV, "place")  # after Slurm wrote every placement, before the phase is marked
    engine = _engine(tmp_path, api)
    try:
        with pytest.raises(Crashed):
            engine.full_round()
        assert engine.journal is not None
        open_ = engine.journal.open_actions()
        assert len([a for a in open_ if a.kind == "place"]) >= 2  # the whole phase is left intended
    finally:
        engine.close()
    monkeypatch.delenv(CRASH_AT_ENV)
    engine = _engine(tmp_path, api)  # the restart reconciles, then plans on
    check_consistent(api, jobs, tmp_path / "state" / "journal.sqlite", settled=False)
    try:
        for _ in range(3):
            engine.full_round()
    finally:
        engine.close()
    check_consistent(api, jobs, tmp_path / "state" / "journal.sqlite")
    assert all(api.get(j).state == "RUNNING" for j in jobs)

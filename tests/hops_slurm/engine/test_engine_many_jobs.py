"""The engine with a long queue (the load benchmark's findings, as behaviour; timings live in
``hops-slurm bench load``): per-refresh work is done once per refresh or per model, not once per job.

On the in-memory stand-in for slurmctld (standin.py): every count below would be one per job (and the
cluster view one pass over all jobs per job: quadratic) before the fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator.errors import EstimateUnavailable
from hops_slurm.config import parse_config
from hops_slurm.directives import DirectiveError, HopsDirectives
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.known_jobs import estimate
from hops_slurm.core.jobview import NO_ESTIMATE
from hops_slurm.engine.state import PROFILE_DONE, EngineState, JobState
from hops_slurm.engine.retry import RetryingReads
from hops_slurm.journal import Journal
from hops_slurm.slurm.scope import HopsScope, ScopedSlurm
from hops_slurm.slurm.enact import Enactor
from hops_slurm.slurm.snapshot import Snapshot
from standin import StandInSlurm

JOBS = 60


def _engine(tmp_path: Path, api: StandInSlurm) -> Engine:
    config = parse_config({"engine": {"settle_timeout": 0.2, "probe_size": "tiny"},
                           "paths": {"state_dir": str(tmp_path / "state")}})
    engine = Engine(config, api=api).open()
    assert engine.state is not None
    engine.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])
    return engine


def test_a_refresh_builds_one_cluster_view_for_all_new_ages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hops_slurm.slurm.snapshot import Snapshot

    api = StandInSlurm()
    for i in range(JOBS):
        api.submit(str(i + 1), f"gpus=1,2 samples={1000 + i} batch-size=8 model=resnet18")
    engine = _engine(tmp_path, api)
    built: list[int] = []
    real = Snapshot.cluster_view
    monkeypatch.setattr(Snapshot, "cluster_view", lambda *a, **k: built.append(1) or real(*a, **k))
    estimators: list[int] = []
    real_for = engine.res.reader.estimator_for
    monkeypatch.setattr(engine.res.reader, "estimator_for", lambda c: estimators.append(1) or real_for(c))
    try:
        engine.refresh()
        assert all(js.profile == PROFILE_DONE for js in engine.tracked.values())  # every job needed its age
        assert len(built) == 1 and len(estimators) == 1
        built.clear()
        engine.refresh()  # the stand-in's store has no data: the ages are tried again, with the same estimator
        assert len(built) == 0 and len(estimators) == 1  # the same nodes: no view built, the estimator kept
    finally:
        engine.close()


def test_refresh_saves_every_job_and_a_batch_is_all_or_nothing(tmp_path: Path) -> None:
    state = EngineState(tmp_path / "engine.sqlite")
    jobs = [JobState(job_id=str(i), name=f"j{i}", user="root", directives="gpus=1 samples=10 batch-size=8 model=resnet18",
                     submit_time=1.0, first_seen=1.0, last_seen=1.0, last_state="PENDING") for i in range(JOBS)]
    state.save_all(jobs)
    assert set(state.jobs()) == {str(i) for i in range(JOBS)}
    jobs[3].wait = 42.0
    state.save_all([jobs[3]])
    assert state.get("3").wait == 42.0  # type: ignore[union-attr]
    bad = JobState(job_id="x", name="x", user="root", directives="", submit_time=1.0, first_seen=1.0, last_seen=1.0,
                   last_state="PENDING")
    bad.probes = {"a100": {1, 2}}  # type: ignore[dict-item]  # not JSON: the whole batch fails
    jobs[4].wait = 7.0
    with pytest.raises(TypeError):
        state.save_all([jobs[4], bad])
    assert state.get("4").wait == 0.0  # type: ignore[union-attr]  # rolled back with it
    state.save_all([])
    assert len(state.jobs()) == JOBS
    state.close()


class _CountingEstimator:
    """Answers like an estimator with no data for any signature, counting the store reads."""

    def __init__(self) -> None:
        self.calls = 0

    def throughput_fn(self, sig: str) -> object:
        self.calls += 1
        raise EstimateUnavailable(f"no throughput for {sig}")

    def expected_age(self, sig: str, samples: float, gpus: object) -> float:
        self.calls += 1
        raise EstimateUnavailable("no age")

    def sensitivity(self, sig: str, gpu_type: str | None = None) -> float:
        self.calls += 1
        raise EstimateUnavailable("no sensitivity")


def test_a_model_without_estimates_is_read_once_for_all_its_jobs() -> None:
    est = _CountingEstimator()
    memo: dict[tuple[object, ...], object] = {}
    jobs = [JobState(job_id=str(i), name="j", user="root", directives="gpus=1 samples=10 batch-size=8 model=resnet18",
                     submit_time=1.0, first_seen=1.0, last_seen=1.0, last_state="PENDING", profile=PROFILE_DONE,
                     signature="root/sig") for i in range(JOBS)]
    for js in jobs:
        assert estimate(js, est, memo) == NO_ESTIMATE  # each job still gets the fallback
    assert est.calls == 1


def test_read_back_directives_are_reused_and_errors_still_raise() -> None:
    text = "gpus=1,2 samples=100 batch-size=8 model=resnet18"
    first = HopsDirectives.from_canonical(text)
    assert HopsDirectives.from_canonical(text) is first
    assert HopsDirectives.from_canonical("hops:" + text) == first
    for _ in range(2):
        with pytest.raises(DirectiveError):
            HopsDirectives.from_canonical("gpus=0 samples=100 batch-size=8 model=resnet18")


def _enactor(tmp_path: Path, api: StandInSlurm, limit: int | None) -> Enactor:
    api.read_back_limit = limit  # type: ignore[attr-defined]  # as the CLI backend's (22.05: no read of some jobs)
    wrapped = RetryingReads(ScopedSlurm(api, HopsScope(("hops",))))  # type: ignore[arg-type]  # as the engine wraps it
    return Enactor(wrapped, Journal(tmp_path / "journal.sqlite"), env_dir=tmp_path / "env", settle_timeout=0.5, poll=0.01)


def test_a_start_in_a_long_listing_is_not_read_back_and_the_next_refresh_verifies_it(tmp_path: Path) -> None:
    # Slurm 22.05 cannot read just the started jobs: beyond read_back_limit jobs the enactment does not
    # read the whole listing again; the started job is left placed and pending, its GPUs promised
    api = StandInSlurm(starts=True)
    for i in range(JOBS):
        api.submit(str(i + 1), "gpus=1,2 samples=100 batch-size=8 model=resnet18")
    enactor = _enactor(tmp_path, api, limit=JOBS - 1)
    before = Snapshot.read(api)
    reads = dict(api.reads)
    result = enactor.apply({"1": {"n1": 2}, "2": {"n2": 4}}, snapshot=before)
    assert sorted(result.started) == ["1", "2"] and result.verified == {} and result.mismatched == {}
    assert api.reads["jobs"] == reads["jobs"] and api.reads["job"] == 0  # no job read after the release
    after = result.after
    assert after is not None
    assert after.placed_pending(enactor.journal) == {"1": {"n1": 2}, "2": {"n2": 4}}
    assert after.free_gpus(promised=after.placed_pending(enactor.journal)) == {"n1": 2, "n2": 0}
    assert [j.job_id for j in after.jobs] == [j.job_id for j in before.jobs]  # the others as read
    # the next refresh's read shows them running: settle verifies, detaches and drops the reservations
    fresh = Snapshot.read(api)
    settled = enactor.settle(snapshot=fresh)
    assert settled.verified == {"1": {"n1": (0, 1)}, "2": {"n2": (0, 1, 2, 3)}}
    assert [r.name for r in api.reservations()] == ["hops-gate"] and api.get("1").reservation == ""


def test_a_start_in_a_short_listing_is_read_back_and_verified_at_once(tmp_path: Path) -> None:
    for limit in (JOBS, None):  # a listing this short, or an in-memory backend (the simulator's): read back
        api = StandInSlurm(starts=True)
        for i in range(JOBS):
            api.submit(str(i + 1), "gpus=1,2 samples=100 batch-size=8 model=resnet18")
        (tmp_path / str(limit)).mkdir()
        enactor = _enactor(tmp_path / str(limit), api, limit=limit)
        result = enactor.apply({"1": {"n1": 2}}, snapshot=Snapshot.read(api))
        assert result.verified == {"1": {"n1": (0, 1)}}
        assert result.after is not None and result.after.listing["1"].active
        assert [r.name for r in api.reservations()] == ["hops-gate"]

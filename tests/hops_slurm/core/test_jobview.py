"""The one job-view pipeline (hops_slurm.core.jobview) and the two backends that call it."""

from __future__ import annotations

import pytest

from estimator.errors import EstimateUnavailable
from estimator.estimate import Estimator
from hops_slurm.core.ledger import JobLedger
from hops_slurm.engine import known_jobs as live
from hops_slurm.core.jobview import FALLBACK_AGE, KnownJob, estimate, job_views
from hops_slurm.engine.state import PROFILE_DONE, PROFILE_FAILED, JobState
from hops_slurm.sim.sim_backend import SimBackend
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.workload import JobSpec
from planner.views import Plan

R50 = "ResNet-50 (batch size 64)"


class StandinEstimator:
    """Stand-in for the estimator where a test needs answers the store cannot give (failures on purpose):
    per signature an age, a throughput per GPU and sensitivities per GPU type."""

    def __init__(self, type_gpus: dict[str, int], ages: dict[str, float], sens: dict[str, dict[str, float]],
                 broken: frozenset[str] = frozenset()) -> None:
        self.type_gpus, self.ages, self.sens, self.broken = type_gpus, ages, sens, broken

    def throughput_fn(self, sig: str):  # type: ignore[no-untyped-def]
        if sig in self.broken:
            raise RuntimeError(f"store row of {sig} unreadable")
        if sig not in self.ages:
            raise EstimateUnavailable(f"{sig}: never profiled")
        return lambda config: 10.0 * sum(config.values())

    def expected_age(self, sig: str, samples: float, reqs: object) -> float:
        return self.ages[sig]

    def sensitivity(self, sig: str, gpu_type: str | None = None) -> float:
        if gpu_type not in self.sens.get(sig, {}):
            raise EstimateUnavailable(f"{sig}: no data on {gpu_type}")
        return self.sens[sig][gpu_type]


def known(job_id: str, sig: str, *, factor: float = 1.0, pending_since: float = 0.0) -> KnownJob:
    return KnownJob(job_id=job_id, user="alice", signature=sig, requirements=(1, 2), declared_samples=1000.0,
                    submit_time=0.0, ledger=JobLedger(last_seen=pending_since), age_factor=factor)


def test_sensitivity_is_eq10_on_the_largest_type_the_job_has_data_for() -> None:
    est = StandinEstimator({"k80": 8, "v100": 32, "p100": 16}, {"a": 1.0, "b": 1.0, "c": 1.0},
                           {"a": {"k80": 3.0, "v100": 2.0}, "b": {"k80": 3.0, "p100": 1.5}, "c": {}})
    assert estimate("a", 1.0, (1,), est).sensitivity == 2.0
    assert estimate("b", 1.0, (1,), est).sensitivity == 1.5  # no v100 data: the next largest type
    assert estimate("c", 1.0, (1,), est).sensitivity == 1.0  # none: not placement sensitive


def test_fallback_age_honesty_factor_wait_and_a_failing_job() -> None:
    est = StandinEstimator({"v100": 8}, {"a": 100.0, "b": 300.0}, {"a": {"v100": 1.2}},
                           broken=frozenset({"bad"}))
    jobs = [known("1", "a", factor=2.0, pending_since=40.0), known("2", "b", factor=0.5), known("3", ""),
            known("4", "never"), known("5", "bad")]
    with pytest.raises(RuntimeError, match="unreadable"):
        job_views(jobs, est, 100.0)
    left_out = []

    def guard(job, what, step):  # type: ignore[no-untyped-def]
        try:
            return step()
        except RuntimeError:
            left_out.append((job.job_id, what))
            return None

    views = {v.job_id: v for v in job_views(jobs, est, 100.0, guard=guard)}
    assert left_out == [("5", "estimating its throughput")] and sorted(views) == ["1", "2", "3", "4"]
    assert views["1"].age == 200.0 and views["1"].sensitivity == 1.2 and views["1"].wait == 60.0
    assert views["2"].age == 300.0  # a factor below 1 never shortens the age
    for fallback in ("3", "4"):  # no signature / no estimate: mean age of the others, 1 sample/s per GPU
        assert views[fallback].age == 200.0 and views[fallback].sensitivity == 1.0
        assert views[fallback].throughput({"n1": 2}) == pytest.approx(2.0 ** 0.5)
    assert job_views([known("3", "")], est, 0.0)[0].age == FALLBACK_AGE


def tiny(tmp_path, gpus: int = 4, count: int = 2):  # type: ignore[no-untyped-def]
    path = tmp_path / "tiny.toml"
    path.write_text('name = "tiny"\n[profiler]\ngpus_per_type = 1\nprobe_seconds = 60.0\n'
                    f'[[server_kind]]\nname = "v"\ngpu_type = "v100"\ngpus = {gpus}\ncount = {count}\nspeed = 1.0\n')
    return load_cluster(path)


def test_live_and_simulated_jobs_with_the_same_facts_get_the_same_view(tmp_path) -> None:
    thr = GroundTruth().samples_per_second(R50, "v100", 4, False)
    backend = SimBackend(tiny(tmp_path), (JobSpec("7", 0.0, R50, (1, 2, 4), thr * 3600, "alice"),))
    backend.wait_until(90.0)  # probed 0..60, pending since
    (sim_view,) = backend.job_views(fragment=False)
    js = JobState(job_id="7", name="train", user="alice", submit_time=0.0, first_seen=0.0, last_seen=60.0,
                  last_state="PENDING", wait=60.0, profile=PROFILE_DONE, signature="alice/" + R50,
                  directives=f"gpus=1,2,4 samples={thr * 3600:.0f} batch-size=64 model=resnet50")
    from hops_slurm.slurm.api import SlurmJob

    (live_view,) = live.job_views([js], {"7": SlurmJob(job_id="7", state="PENDING")}, backend.knowledge.estimator,
                                  90.0, lambda js, why: pytest.fail(why))
    assert live_view.wait == sim_view.wait == 90.0
    assert live_view.age == pytest.approx(sim_view.age, rel=1e-6) and live_view.age > 0
    assert live_view.sensitivity == sim_view.sensitivity
    for config in ({"v-00": 1}, {"v-00": 2, "v-01": 2}):
        assert live_view.throughput(config) == pytest.approx(sim_view.throughput(config), rel=1e-9)
    failed = JobState(job_id="8", name="x", user="bob", submit_time=0.0, first_seen=0.0, last_seen=90.0,
                      last_state="PENDING", profile=PROFILE_FAILED, directives=js.directives)
    assert live.known_job(failed, None).signature == ""  # its probes failed: the fallback
    backend.close()


def test_simulated_views_follow_what_the_store_learns(tmp_path) -> None:
    """Estimates are asked afresh each planning, as live: after a spread job's runtime record its
    sensitivity is the estimator's new answer, not the one it had at arrival."""
    thr = GroundTruth().samples_per_second(R50, "v100", 8, True)
    backend = SimBackend(tiny(tmp_path), (JobSpec("a", 0.0, R50, (8,), thr * 7200, "alice"),))
    backend.wait_until(60.0)
    (first,) = backend.job_views(fragment=False)
    backend.apply(Plan({"a": {"v-00": 4, "v-01": 4}}), fragment=False)
    # its first runtime record is in (a window after its process start)
    backend.wait_until(60.0 + backend.settings.costs.process_start + backend.settings.record_seconds + 1.0)
    assert backend.knowledge.records == 1
    (now,) = backend.job_views(fragment=False)
    fresh = Estimator.for_cluster(backend.knowledge.store, backend.cluster.view())
    assert now.sensitivity == pytest.approx(fresh.sensitivity("alice/" + R50, "v100"), rel=1e-9)
    assert now.sensitivity != pytest.approx(first.sensitivity, rel=1e-3)
    backend.close()


class _NoData:
    """An estimator with nothing for any model (an unprofiled model, its records not yet in)."""

    def throughput_fn(self, signature: str):
        raise EstimateUnavailable("no GPU type has a positive throughput for this job")


def test_a_model_without_an_estimate_is_logged_once_not_once_per_job(caplog) -> None:
    caplog.set_level("DEBUG", logger="hops_slurm.core.jobview")
    for _ in range(3):  # three refreshes ask again for each of its five jobs
        for j in range(5):
            estimate("sig-log-once", 1000.0, (1, 2), _NoData(), job_id=f"job-log-once-{j}")  # type: ignore[arg-type]
    told = [r for r in caplog.records if "sig-log-once" in r.getMessage() or "job-log-once" in r.getMessage()]
    assert [r.levelname for r in told].count("INFO") == 1
    assert "job-log-once-0" in next(r.getMessage() for r in told if r.levelname == "INFO")
    assert len(told) == 15  # every job's ask still at DEBUG


def test_a_remembered_failure_does_not_grow_at_every_ask() -> None:
    # one planning's memo is shared by all jobs of a model: re-raising the remembered exception object itself
    # grew its traceback by a few frames per job and kept every frame alive (75 MB per refresh at 10,000 jobs)
    memo: dict = {}
    seen = []
    for j in range(50):
        assert estimate("sig-no-growth", 1000.0, (1,), _NoData(), memo, job_id=str(j)).throughput is None  # type: ignore[arg-type]
    for value in memo.values():
        seen.append(value)
        assert isinstance(value, EstimateUnavailable)
        tb, depth = value.__traceback__, 0
        while tb is not None:
            depth, tb = depth + 1, tb.tb_next
        assert depth <= 5
    assert seen


def test_preemptions_are_counted_as_runs_close_and_new_ones_open() -> None:
    from hops_slurm.core.ledger import JobLedger, account
    from hops_slurm.core.jobview import preemptions

    ledger = JobLedger(last_seen=0.0)
    account(ledger, 10.0, "RUNNING", {"n0": 2})
    assert preemptions(ledger.placements) == 0
    account(ledger, 20.0, "PENDING", {})  # requeued: the run closes preempted
    assert preemptions(ledger.placements) == 1
    for t in (30.0, 50.0, 70.0):  # three more runs, each requeued
        account(ledger, t, "RUNNING", {"n1": 2})
        assert preemptions(ledger.placements) == len(ledger.placements) - 1
        account(ledger, t + 10.0, "PENDING", {})
        assert preemptions(ledger.placements) == len(ledger.placements)
    account(ledger, 90.0, "RUNNING", {"n0": 2})
    account(ledger, 100.0, "ENDED", {})  # the last run ends: not a preemption
    assert preemptions(ledger.placements) == 4 == sum(1 for p in ledger.placements if p.get("preempted"))
    assert preemptions([dict(p) for p in ledger.placements]) == 4  # a copy (a state reloaded) counts afresh

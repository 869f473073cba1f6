"""planner.slurm_start: Slurm's expected starts (squeue --start) from the jobs' time limits."""

from __future__ import annotations

from planner.slurm_start import expected_starts
from planner.views import ClusterView, Config, JobView, NodeView


def _job(job_id: str, gpus: int, limit: float, *, submit: float = 0.0, current: Config | None = None,
         run_time: float = 0.0) -> JobView:
    return JobView(job_id, (gpus,), submit_time=submit, wait=0.0, age=limit / 2, sensitivity=1.0,
                   throughput=lambda cfg: float(sum(cfg.values())), time_limit=limit, current=current,
                   run_time=run_time)


def _cluster() -> ClusterView:
    return ClusterView((NodeView("n0", "v100", "v100-a", 4, 4), NodeView("n1", "v100", "v100-a", 4, 4)))


def test_each_pending_job_gets_the_earliest_start_its_limit_fits_in_priority_order() -> None:
    jobs = (
        _job("r0", 4, 1000.0, current={"n0": 4}, run_time=400.0),  # ends by its limit at 600
        _job("r1", 4, 3000.0, current={"n1": 4}, run_time=0.0),  # ends at 3000
        _job("a", 8, 500.0, submit=1.0),  # the whole cluster: once both have ended
        _job("b", 4, 1000.0, submit=2.0),  # one node from 600, but a's reservation starts at 3000
        _job("c", 2, 100.0, submit=3.0),  # n0 is b's until 1600, then free until a at 3000
    )
    got = expected_starts(_cluster(), jobs, 0.0)
    assert got["a"] == 3000.0
    assert got["b"] == 600.0  # 600 + 1000 <= 3000: it ends before a starts
    assert got["c"] == 1600.0  # not before: every GPU is held or reserved until then
    assert set(got) == {"a", "b", "c"}


def test_a_request_larger_than_the_cluster_never_starts() -> None:
    assert expected_starts(_cluster(), (_job("x", 16, 100.0),), 0.0) == {"x": None}

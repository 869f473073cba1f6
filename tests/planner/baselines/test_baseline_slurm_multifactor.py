"""slurm-multifactor: Slurm's multifactor priority (age, fair share with decay, job size, partition,
QOS) in front of the same EASY backfill as slurm-backfill (issue 23)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from baseline_helpers import cluster, job, typed_throughput

from planner.baselines import SlurmMultifactorPolicy
from planner.policies import make_policy
from planner.views import freeze_config


def test_a_user_who_used_the_cluster_waits_behind_one_who_did_not() -> None:
    view = cluster([("n0", "v100", 4)])
    thr = typed_throughput(view, {"v100": 1.0})
    policy = make_policy("slurm-multifactor")
    running = replace(job("r", (4,), thr, submit=0.0, current=freeze_config({"n0": 4}), run_time=3600.0), user="heavy")
    older = replace(job("h2", (4,), thr, submit=10.0), user="heavy")
    newer = replace(job("l1", (4,), thr, submit=20.0), user="light")
    policy.plan(view, (running, older, newer), 0.0)
    plan = policy.plan(view, (running, older, newer), 3600.0)  # an hour of heavy's 4 GPUs counted
    assert plan.diagnostics["queue"] == ["l1", "h2"]
    prio = plan.diagnostics["priorities"]
    assert prio["l1"] > prio["h2"]
    # age-only backfill keeps submission order
    assert make_policy("slurm-backfill").plan(view, (running, older, newer), 3600.0).diagnostics["queue"] == ["h2", "l1"]


def test_usage_decays_with_the_half_life() -> None:
    view = cluster([("n0", "v100", 4)])
    thr = typed_throughput(view, {"v100": 1.0})
    policy = SlurmMultifactorPolicy(decay_half_life=3600.0)
    running = replace(job("r", (4,), thr, current=freeze_config({"n0": 4})), user="u")
    policy.plan(view, (running,), 0.0)
    policy.plan(view, (running,), 3600.0)
    after_run = policy._usage["u"]
    # 4 GPUs for an hour with a 1 h half-life: 4 * 3600 * (1 - 1/2) / ln 2 GPU-seconds
    assert after_run == pytest.approx(4 * 3600 * 0.5 / 0.6931471805599453)
    policy.plan(view, (), 7200.0)
    assert policy._usage["u"] == pytest.approx(after_run / 2)


def test_job_size_and_age_factors() -> None:
    view = cluster([("n0", "v100", 8)])
    thr = typed_throughput(view, {"v100": 1.0})
    big, small = job("big", (8,), thr, submit=0.0), job("small", (1,), thr, submit=0.0)
    policy = SlurmMultifactorPolicy(weight_fairshare=0.0, weight_age=0.0, weight_job_size=1000.0)
    assert policy.plan(view, (small, big), 0.0).diagnostics["queue"] == ["big", "small"]
    favor = SlurmMultifactorPolicy(weight_fairshare=0.0, weight_age=0.0, weight_job_size=1000.0, favor_small=True)
    assert favor.plan(view, (big, small), 0.0).diagnostics["queue"] == ["small", "big"]
    aged = SlurmMultifactorPolicy(weight_fairshare=0.0, weight_job_size=0.0, weight_age=1000.0, max_age=100.0)
    p = aged.plan(view, (job("a", (1,), thr, submit=50.0),), 100.0).diagnostics["priorities"]
    assert p["a"] == pytest.approx(1000.0 * 0.5 + 1000.0 * 1.0)  # half of PriorityMaxAge, plus the partition term


@pytest.mark.parametrize("options, message", [
    ({"weight_age": -1.0}, "weight_age must be a number in"),
    ({"decay_half_life": 0.0}, "decay_half_life must be seconds in"),
])
def test_bad_options_name_the_field(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SlurmMultifactorPolicy(**options)

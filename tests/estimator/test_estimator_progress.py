"""No progress, no placement: a measured config where the job made no progress answers 0 (estimator.progress)."""

from __future__ import annotations

import pytest

from estimator.estimate import NO_PROGRESS, config_throughput, per_gpu_estimate
from estimator.extrapolate import extrapolated_per_gpu
from estimator.mixture import Mixture
from estimator.model import TimeComponents
from estimator.progress import NO_PROGRESS_SHARE, best_rate, no_progress
from estimator.snapshot import Calibration, JobSnapshot, TypeTheory

V100 = TypeTheory(TimeComponents(0.01, 0.02, 0.005, pattern=1, params=1e8, batch_size=32), Mixture.constant(0.0))
CALS = {"v100": Calibration("v100", b_link=1e10, b_net=1e9)}
ONE_GPU = 32 / 0.035  # the probe's single-GPU per-GPU rate
#: one step of batch 32 in the recorder's longest window (a day): what a stalled job's record says
STALLED = 32 / 86400.0


def test_a_stalled_config_answers_zero_and_the_others_stay():
    snap = JobSnapshot("j", theory={"v100": V100}, type_aggregated={("v100", 2): STALLED},
                       entity_aggregated={("a", 2): STALLED})
    assert best_rate(snap) == pytest.approx(ONE_GPU)
    est = per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=2, nodes=1, server="a")
    assert est.per_gpu == 0.0 and est.layer == NO_PROGRESS
    # on another server of the type too: the type layer says the job stalls on 2 GPUs of it
    assert per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=2, nodes=1, server="b").per_gpu == 0.0
    assert config_throughput({"a": 2}, snap, CALS, {"a": ("v100", "a")}) == 0.0
    # one GPU, and two nodes, are not ruled out by it
    assert per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=1, nodes=1).per_gpu == pytest.approx(ONE_GPU)
    assert per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=2, nodes=2).per_gpu > 0.0


def test_slow_but_real_progress_is_progress():
    slow = ONE_GPU * NO_PROGRESS_SHARE * 2
    snap = JobSnapshot("j", theory={"v100": V100}, type_aggregated={("v100", 4): slow})
    assert not no_progress(slow, snap)
    assert per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=4, nodes=1).per_gpu == pytest.approx(slow)


def test_a_stalled_measurement_is_not_carried_to_other_counts():
    # measured in place only (no probe): 1 GPU runs, 2 GPUs stalled; 4 GPUs is carried from 1 GPU
    snap = JobSnapshot("j", type_aggregated={("v100", 1): 100.0, ("v100", 2): STALLED})
    assert extrapolated_per_gpu(snap, "v100", gpus=4, nodes=1) == pytest.approx(100.0)
    assert no_progress(STALLED, JobSnapshot("j", type_aggregated={("v100", 2): STALLED}))  # nothing better known
    assert no_progress(float("nan"), snap)


def test_uncertainty_and_the_optimistic_bound_of_configs_no_record_measured():
    from estimator.estimate import Estimator
    from estimator.explore import MANY_RECORDS, MODEL_ONLY, ONE_RECORD, confidence
    from estimator.snapshot import MemorySource

    snap = JobSnapshot("j", theory={"v100": V100}, type_aggregated={("v100", 1): 800.0, ("v100", 2): 700.0},
                       type_aggregated_n={("v100", 1): 3})
    assert confidence(snap, "v100", gpus=1, nodes=1) == MANY_RECORDS
    assert confidence(snap, "v100", gpus=2, nodes=1) == ONE_RECORD
    assert confidence(snap, "v100", gpus=4, nodes=1) == MODEL_ONLY
    est = Estimator(MemorySource({"j": snap}, dict(CALS)), {"a": ("v100", "a"), "b": ("v100", "b")})
    opt = est.optimistic_fn("j")
    assert opt({"a": 2}) == 0.0  # measured: nothing to explore
    # 4 GPUs: no record; the measured single-GPU rate per GPU, or the model's estimate where that is higher
    exact = est.throughput_fn("j")
    assert opt({"a": 4}) == pytest.approx(max(4 * 800.0, exact({"a": 4})))
    assert opt({"a": 2, "b": 2}) == pytest.approx(max(4 * 800.0, exact({"a": 2, "b": 2})))  # two nodes: no record
    assert exact({"a": 2, "b": 2}) < 4 * 800.0  # the bound is above the pessimistic two-node estimate

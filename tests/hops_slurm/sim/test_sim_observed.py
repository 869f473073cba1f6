"""The scheduler's view: probes give type level numbers; runs reveal entity-level speed."""

import pytest

from hops_slurm.sim.observed import Observations, ProbeResult, age_eq9, sensitivity_eq10


def make() -> Observations:
    obs = Observations({"f1": "v100", "s1": "v100", "s2": "v100", "k1": "k80"},
                       {"f1": "v100-fast", "s1": "v100-slow", "s2": "v100-slow", "k1": "k80-x"})
    obs.record_probe("a", "v100", ProbeResult(100.0, 190.0, 160.0))
    obs.record_probe("a", "k80", ProbeResult(20.0, 38.0, 30.0))
    obs.record_probe("b", "v100", ProbeResult(50.0, 100.0, 90.0))
    return obs


def test_type_level_extrapolation_from_probes():
    obs = make()
    fn = obs.throughput_fn("a")
    assert fn({"s1": 1}) == pytest.approx(100.0)
    assert fn({"s1": 2}) == pytest.approx(190.0)
    assert fn({"s1": 1, "s2": 1}) == pytest.approx(160.0)
    # 4 GPUs on one server: 100 * 4 * 0.95 ** 2
    assert fn({"s1": 4}) == pytest.approx(361.0)
    # mixed types: the slower type's spread number
    assert fn({"s1": 1, "k1": 1}) == pytest.approx(30.0)


def test_slow_server_class_is_learned_from_a_run_and_shared_across_jobs():
    obs = make()
    assert obs.estimate("b", {"s1": 1}) == obs.estimate("b", {"f1": 1})  # invisible before any run
    obs.record_run("a", {"s1": 1}, 80.0)  # ran at 0.8 of the probe's number
    assert obs.estimate("a", {"s1": 1}) == pytest.approx(80.0)
    assert obs.estimate("a", {"f1": 1}) == pytest.approx(100.0)
    assert obs.estimate("b", {"s2": 1}) == pytest.approx(40.0)  # class factor 0.8 applies to job b too
    assert obs.estimate("b", {"f1": 1}) == pytest.approx(50.0)


def test_eq9_age_and_eq10_sensitivity_by_hand():
    obs = make()
    # P(v100) = 48/64, P(k80) = 16/64; R_avg = (1 + 2 + 3) / 3 = 2
    age = age_eq9(obs, "a", 12000.0, (1, 2, 3), {"v100": 48, "k80": 16})
    assert age == pytest.approx(0.75 * 12000 / (100 * 2) + 0.25 * 12000 / (20 * 2))
    assert sensitivity_eq10(obs, "a", "v100") == pytest.approx(100.0 / 80.0)
    assert sensitivity_eq10(obs, "b", "k80") == float("inf")  # never probed there

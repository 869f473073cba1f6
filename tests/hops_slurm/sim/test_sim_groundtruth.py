"""Ground truth follows the measured data and the documented rules for missing counts."""

import math

import pytest

from hops_slurm.errors import HopsError
from hops_slurm.sim.groundtruth import SPREAD_FALLBACK, GroundTruth, NodeSpeed

R50 = "ResNet-50 (batch size 64)"
# measured steps/s from hops_slurm/data/gavel/simulation_throughputs.json
V100 = {1: 4.394774823323071, 2: 7.922054367597505, 4: 9.451949566394442, 8: 17.303172756892167}
V100_SPREAD = {2: 6.865936825179568, 4: 11.136430014818272, 8: 19.757330902241037}
K80 = {1: 0.6190282202246573, 2: 1.2636370655757299}


@pytest.fixture(scope="module")
def truth() -> GroundTruth:
    return GroundTruth()


def test_measured_counts_are_the_data_times_batch_size(truth):
    assert truth.samples_per_second(R50, "v100", 1, False) == pytest.approx(V100[1] * 64)
    assert truth.samples_per_second(R50, "v100", 8, True) == pytest.approx(V100_SPREAD[8] * 64)
    assert truth.steps_per_second(R50, "v100", 4, False) == pytest.approx(V100[4])


def test_missing_counts_interpolate_linearly(truth):
    assert truth.steps_per_second(R50, "v100", 3, False) == pytest.approx((V100[2] + V100[4]) / 2)
    assert truth.steps_per_second(R50, "v100", 6, False) == pytest.approx(V100[4] + (V100[8] - V100[4]) / 2)
    assert truth.steps_per_second(R50, "v100", 5, True) == pytest.approx(
        V100_SPREAD[4] + (V100_SPREAD[8] - V100_SPREAD[4]) / 4
    )


def test_sixteen_extrapolates_by_the_last_doubling(truth):
    gain = V100_SPREAD[8] / V100_SPREAD[4]
    assert truth.steps_per_second(R50, "v100", 16, True) == pytest.approx(V100_SPREAD[8] * gain)
    # consolidated 4 -> 8 gain 1.83: clipped to at most 2, at least 1
    assert truth.steps_per_second(R50, "v100", 16, False) == pytest.approx(V100[8] * (V100[8] / V100[4]))


def test_missing_spread_measurement_falls_back(truth):
    assert truth.steps_per_second(R50, "k80", 2, True) == pytest.approx(K80[2] * SPREAD_FALLBACK)


def test_config_rules_slowest_type_and_slowest_server(truth):
    nodes = {"a": NodeSpeed("v100", 1.0), "b": NodeSpeed("v100", 0.8), "c": NodeSpeed("k80", 1.0)}
    assert truth.throughput(R50, {"a": 2}, nodes) == pytest.approx(V100[2] * 64)
    assert truth.throughput(R50, {"b": 2}, nodes) == pytest.approx(V100[2] * 64 * 0.8)
    assert truth.throughput(R50, {"a": 1, "b": 1}, nodes) == pytest.approx(V100_SPREAD[2] * 64 * 0.8)
    assert truth.throughput(R50, {"a": 1, "c": 1}, nodes) == pytest.approx(K80[2] * SPREAD_FALLBACK * 64)
    assert truth.throughput(R50, {}, nodes) == 0.0


def test_unknown_model_is_an_actionable_error(truth):
    with pytest.raises(HopsError, match="ResNet-50"):
        truth.check_model("VGG-19")
    assert not math.isnan(truth.samples_per_second("A3C", "k80", 1, False))

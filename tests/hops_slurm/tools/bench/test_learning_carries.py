"""The learning bench's other rules for carrying a model's one run on a GPU type: each reads only what the
store held, the ring rule is estimator.refine's, and the table reports every cell."""

from __future__ import annotations

import math

import pytest

from estimator.model import per_gpu_theory_throughput
from estimator.refine import refined_per_gpu
from estimator.snapshot import Calibration, JobSnapshot
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.tools.bench.estimator_learning import _cells
from hops_slurm.tools.bench.learning_carries import (PARTIAL, RULES, CarryPoint, alternatives, carries_table,
                                                     carries_verdict, coverage_table)
from hops_slurm.tools.bench.learning_family import probed_theory
from hops_slurm.tools.bench.learning_replay import Cell, Run, place, replay

MODEL = "ResNet-50 (batch size 64)"
CAL = Calibration("v100", b_link=2.0e9, b_net=4.0e8)


@pytest.fixture(scope="module")
def truth() -> GroundTruth:
    return GroundTruth()


def _snap(truth: GroundTruth, aggregated: dict | None = None, distributed: dict | None = None) -> JobSnapshot:
    return JobSnapshot("m", theory={"v100": probed_theory(truth, MODEL, "v100")},
                       type_aggregated=aggregated or {}, type_distributed=distributed or {})


def test_the_ring_rule_is_estimator_refine_and_the_held_rate_is_the_run(truth):
    snap = _snap(truth, aggregated={("v100", 2): 250.0})
    got = alternatives(snap, CAL, "v100", 8, False)
    assert got["ring"] == pytest.approx(8 * refined_per_gpu(snap, "v100", gpus=8, nodes=1), rel=1e-12)
    assert got["rate held"] == pytest.approx(8 * 250.0)
    # a steeper count law carries more communication to 8 GPUs than the ring share: a lower rate
    assert got["n-1"] < got["log2"] < got["ring"]


def test_the_formula_ratio_gives_the_formula_where_the_run_measured_the_formula(truth):
    theory = probed_theory(truth, MODEL, "v100")

    def formula(gpus: int, nodes: int) -> float:
        return per_gpu_theory_throughput(theory.components, theory.data, gpus=gpus, nodes=nodes, b_link=CAL.b_link,
                                         b_net=CAL.b_net)

    snap = _snap(truth, aggregated={("v100", 2): formula(2, 1)})
    assert alternatives(snap, CAL, "v100", 4, False)["formula ratio"] == pytest.approx(4 * formula(4, 1))
    halved = _snap(truth, aggregated={("v100", 2): formula(2, 1) / 2})
    assert alternatives(halved, CAL, "v100", 4, False)["formula ratio"] == pytest.approx(2 * formula(4, 1))
    assert alternatives(snap, None, "v100", 4, False)["formula ratio"] is None  # no calibration, no formula


def test_the_own_ratio_elsewhere_reads_the_models_runs_on_other_types_and_layouts(truth):
    snap = _snap(truth, aggregated={("v100", 2): 200.0, ("k80", 2): 40.0, ("k80", 4): 30.0},
                 distributed={("v100", 2): 100.0, ("v100", 4): 90.0})
    got = alternatives(snap, CAL, "v100", 4, False)
    assert got["own ratio elsewhere"] == pytest.approx(4 * 200.0 * math.sqrt(0.75 * 0.9))
    alone = _snap(truth, aggregated={("v100", 2): 200.0, ("k80", 2): 40.0})
    assert alternatives(alone, CAL, "v100", 4, False)["own ratio elsewhere"] is None


def test_the_other_layout_rule_reads_the_models_rate_at_the_count_in_the_other_layout(truth):
    theory = probed_theory(truth, MODEL, "v100")

    def formula(gpus: int, nodes: int) -> float:
        return per_gpu_theory_throughput(theory.components, theory.data, gpus=gpus, nodes=nodes, b_link=CAL.b_link,
                                         b_net=CAL.b_net)

    snap = _snap(truth, aggregated={("v100", 2): 200.0}, distributed={("v100", 4): 120.0})
    got = alternatives(snap, CAL, "v100", 4, False)["other layout"]
    assert got == pytest.approx(4 * 120.0 * formula(4, 1) / formula(4, 4))
    assert alternatives(snap, CAL, "v100", 8, False)["other layout"] is None  # never ran 8 across servers


def test_no_run_in_the_scope_answers_nothing(truth):
    snap = _snap(truth, distributed={("v100", 2): 100.0}, aggregated={("v100", 1): 300.0})
    assert all(v is None for v in alternatives(snap, CAL, "v100", 4, False).values())
    assert alternatives(snap, CAL, "v100", 4, True)["rate held"] == pytest.approx(400.0)


def test_the_replay_keeps_what_the_store_held_at_the_point(truth):
    """ResNet-50 on consolidated V100s, 2 then 4 GPUs: the point of the stage "type" keeps the snapshot with
    the 2-GPU run only (not the 4-GPU one it predicts), and its ring rule is the production estimate there."""
    c2, c4 = Cell("v100", 2, False), Cell("v100", 4, False)
    out = replay(truth, [Run("a", MODEL, c2, 0, place(c2, 0)), Run("b", MODEL, c4, 1, place(c4, 1))])
    key = (MODEL, c4, "type")
    snap, cal = out.held[key]
    assert set(snap.type_aggregated) == {("v100", 2)} and cal is not None
    got = alternatives(snap, cal, "v100", 4, False)
    assert got["ring"] == pytest.approx(out.first_at[key][0], rel=1e-9)


def test_the_tables_report_every_cell_and_every_coverage_class(truth):
    cells = _cells(truth)
    answers = {rule: 1.2 for rule in RULES} | {rule: None for rule in PARTIAL}
    points = [CarryPoint("m", c, 1.05, answers, 1.0, i % 6) for i, c in enumerate(cells)]
    lines = carries_table(cells, points, 0.10)
    assert len(lines) == 2 + len(cells) + 1
    assert lines[-1] == "| mean over cells | | | 18 | 5.0% | " + " | ".join(["20.0%"] * (len(RULES) - 2)) + " | – | – |"
    assert "✗" not in "".join(lines)
    cover = coverage_table(points)
    assert [line.split(" | ")[1] for line in cover[2:]] == ["3", "3", "3", "3", "6"]
    verdict = carries_verdict(cells, points, 0.10)
    assert verdict.startswith("Mean over cells: production 5.0% (target 10.0%: met); the best rule that answers "
                              "every point, `ring`, 20.0%")

"""The learning bench's denser store: a probe that also runs the model data-parallel on one node
(``engine.probe_data_parallel``) feeds the store what that run measures through the production ingest,
stages stay those of the runs, and the section marks the cells a probe measured."""

from __future__ import annotations

import re

import pytest

from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.tools.bench.estimator_learning import TYPE_TARGET, _cells
from hops_slurm.tools.bench.learning_probes import PROBE_SETS, probed, probes_section
from hops_slurm.tools.bench.learning_replay import Cell, Replay, place, plan_runs, replay

MODEL = "ResNet-50 (batch size 64)"


@pytest.fixture(scope="module")
def truth() -> GroundTruth:
    return GroundTruth()


def test_a_multi_gpu_probe_gives_its_count_before_any_run_and_only_on_one_node(truth):
    cell, spread = Cell("v100", 8, False), Cell("v100", 8, True)
    with_probe, without = Replay(truth), Replay(truth)
    try:
        with_probe.probe(MODEL, 0.0, (8,))
        without.probe(MODEL, 0.0)
        measured = with_probe.measured(MODEL, cell)
        assert with_probe.estimate(MODEL, place(cell, 1)) == pytest.approx(measured, rel=1e-9)
        assert without.estimate(MODEL, place(cell, 1)) != pytest.approx(measured, rel=1e-3)
        # the probe ran on one node: the spread configuration is not measured by it
        assert with_probe.estimate(MODEL, place(spread, 1)) != pytest.approx(with_probe.measured(MODEL, spread), rel=1e-3)
        stored = with_probe.knowledge.store.snapshot(Replay.signature(MODEL))
        assert set(stored.entity_aggregated) >= {("profiler-v100", 8)}
    finally:
        with_probe.close()
        without.close()


def test_probes_leave_the_stages_those_of_the_runs(truth):
    runs = plan_runs(truth, 0, 60)
    plain, dense = replay(truth, runs), replay(truth, runs, probe_gpus=(2, 8))
    assert set(plain.first_at) == set(dense.first_at)
    assert any(s == "type" for _, _, s in dense.first_at)


def test_probed_is_one_node_at_a_probed_count():
    assert probed(Cell("k80", 8, False), (2, 8))
    assert not probed(Cell("k80", 8, True), (2, 8))
    assert not probed(Cell("k80", 4, False), (2, 8))


def test_the_section_marks_probed_cells_and_its_shares_add_up_to_the_distance_to_the_target(truth):
    out = replay(truth, plan_runs(truth, 0, 150))
    points = [(m, c, est, plain, meas) for (m, c, s), (est, plain, meas) in out.first_at.items() if s == "type"]
    cells = [c for c in _cells(truth) if any(p[1] == c for p in points)]
    assert any(probed(c, ks) for c in cells for ks in PROBE_SETS)
    lines = probes_section(truth, cells, points, (0,), 150, TYPE_TARGET)
    rows = {tuple(r.split(" | ")[:3]): r for r in lines if r.startswith("| ") and r.split(" | ")[1] in ("consolidated", "spread")}
    assert len(rows) == len(cells)
    for c in cells:
        cols = rows[(f"| {c.gpu_type}", c.layout, str(c.gpus))].strip(" |").split(" | ")[6:]
        assert [col.endswith("(probed)") for col in cols] == [probed(c, ks) for ks in PROBE_SETS]
        for col, ks in zip(cols, PROBE_SETS):
            if probed(c, ks):
                assert col == "0.0% (probed)"
    shares = [float(r.split(" | ")[5]) for r in rows.values()]
    mean_row = next(r for r in lines if r.startswith("| mean over cells"))
    mean, distance = re.findall(r"\| ([-+0-9.]+)%? ", mean_row)[1:3]
    assert sum(shares) == pytest.approx(float(distance), abs=0.01 * len(cells))
    assert float(distance) == pytest.approx(float(mean) - 100 * TYPE_TARGET, abs=0.06)

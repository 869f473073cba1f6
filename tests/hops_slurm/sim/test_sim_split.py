"""The fast path's rule for Slurm's split of a per-job GPU count (:mod:`hops_slurm.sim.split`): the placements
the enactor refuses (:func:`hops_slurm.slurm.placement.realisable`) are not made by the simulator either."""

import pytest

from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.costs import CostModel
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.sim_backend import SimBackend, SimSettings
from hops_slurm.sim.split import splittable
from hops_slurm.sim.workload import JobSpec
from planner.views import Plan

R50 = "ResNet-50 (batch size 64)"
CAP = {"n0": 4, "n1": 4}
ORDER = {"n0": 0, "n1": 1}


def test_an_uneven_config_is_placed_only_when_slurms_greedy_split_of_the_free_gpus_is_the_plan() -> None:
    # idle: 5 GPUs over n0, n1 split greedily in node order is {n0: 4, n1: 1}
    assert splittable({"b": {"n0": 4, "n1": 1}}, {}, {}, CAP, ORDER, fragment=False) == {"b": {"n0": 4, "n1": 1}}
    assert splittable({"b": {"n0": 1, "n1": 4}}, {}, {}, CAP, ORDER, fragment=False) == {}
    # the node order is Slurm's, not the config's
    assert splittable({"b": {"n0": 1, "n1": 4}}, {}, {}, CAP, {"n0": 1, "n1": 0}, fragment=False) == {"b": {"n0": 1, "n1": 4}}
    # an even config is Slurm's split whatever is free
    assert splittable({"b": {"n0": 2, "n1": 2}}, {}, {}, CAP, ORDER, fragment=False) == {"b": {"n0": 2, "n1": 2}}


def test_the_free_gpus_are_counted_as_the_enactor_counts_them() -> None:
    running = {"a": ({"n0": 3}, True)}
    # a fragment plan keeps a running: n0 has 1 free, so {n0: 1, n1: 4} is the greedy split
    assert splittable({"b": {"n0": 1, "n1": 4}}, running, {}, CAP, ORDER, fragment=True) == {"b": {"n0": 1, "n1": 4}}
    # a round plan that does not keep a in place preempts it: its GPUs count free, and Slurm would take 4 of n0
    assert splittable({"b": {"n0": 1, "n1": 4}}, running, {}, CAP, ORDER, fragment=False) == {}
    # ... one that keeps it leaves them busy
    kept = {"a": {"n0": 3}, "b": {"n0": 1, "n1": 4}}
    assert splittable(kept, running, {}, CAP, ORDER, fragment=False) == kept
    # GPUs a notice still holds are busy; a job placed and waiting for its GPUs holds none
    assert splittable({"b": {"n0": 1, "n1": 4}}, {}, {"n0": 3}, CAP, ORDER, fragment=False) == {"b": {"n0": 1, "n1": 4}}
    waiting = {"a": ({"n0": 3}, False)}
    assert splittable({"b": {"n0": 1, "n1": 4}}, waiting, {}, CAP, ORDER, fragment=True) == {}


def test_a_kept_placement_stays_and_each_placement_takes_its_gpus_from_the_next() -> None:
    # a placement equal to the job's own (running or waiting) is kept as it is, split or not
    assert splittable({"b": {"n0": 1, "n1": 4}}, {"b": ({"n0": 1, "n1": 4}, False)}, {}, CAP, ORDER,
                      fragment=False) == {"b": {"n0": 1, "n1": 4}}
    # in the plan's order: a's 3 GPUs of n0 leave 1 free there, which makes b's split the plan
    plan = {"a": {"n0": 3}, "b": {"n0": 1, "n1": 4}}
    assert splittable(plan, {}, {}, CAP, ORDER, fragment=False) == plan
    assert splittable(dict(reversed(plan.items())), {}, {}, CAP, ORDER, fragment=False) == {"a": {"n0": 3}}


def test_the_simulator_leaves_a_job_pending_where_the_enactor_would_refuse_its_placement(tmp_path) -> None:
    path = tmp_path / "two.toml"
    path.write_text('name = "two"\n[profiler]\ngpus_per_type = 1\nprobe_seconds = 60.0\n'
                    '[[server_kind]]\nname = "v"\ngpu_type = "v100"\ngpus = 4\ncount = 2\n')
    samples = GroundTruth().samples_per_second(R50, "v100", 4, False) * 1000.0
    backend = SimBackend(load_cluster(path), (JobSpec("b", 0.0, R50, (5,), samples),), SimSettings(costs=CostModel.free()))
    backend.wait_until(0.0)
    backend.job_views(fragment=False)
    refused = backend.apply(Plan({"b": {"v-00": 1, "v-01": 4}}), fragment=False)
    assert refused.started == [] and backend.active["b"].config is None and not backend.active["b"].running
    placed = backend.apply(Plan({"b": {"v-00": 4, "v-01": 1}}), fragment=False)
    assert placed.started == ["b"] and backend.active["b"].running
    (rec,) = backend.job_records()
    assert rec.placements[0].config == {"v-00": 4, "v-01": 1} and rec.start == pytest.approx(0.0)

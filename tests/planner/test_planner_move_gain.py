"""A move's smallest gain (planner.move_gain, ``move_gain``): a round plan moves a running job only to a config
estimated at least that many times as fast as where it runs."""

from __future__ import annotations

import pytest

from planner.hops import HopsPolicy
from planner.move_gain import drop_small_moves
from planner.params import PlannerParams
from planner.signatures import Candidate
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config

from tests.planner.two_speeds import SLOW_FAST, by_node


def running() -> JobView:
    return JobView("R", (2, 4), 0.0, 0.0, 1000.0, 1.1, by_node, total_samples=1e6,
                   current=freeze_config({"slow": 4}), placed_for=1000.0, run_time=1000.0, restart_cost=60.0)


@pytest.mark.parametrize(("gain", "where"), [(0.0, {"fast": 4}), (2.5, {"fast": 4}), (3.5, {"slow": 4})])
def test_a_move_is_made_only_at_the_smallest_gain(gain: float, where: Config) -> None:
    p = PlannerParams(gap=0.0, restart_penalty=0.0, move_gain=gain)
    assert HopsPolicy(p).plan(SLOW_FAST, (running(),), 10_000.0).assignments["R"] == where


def test_drop_small_moves_keeps_the_current_config_and_waiting_jobs() -> None:
    w = JobView("W", (2,), 0.0, 10.0, 100.0, 1.1, by_node, total_samples=1e6)
    cands = [Candidate("R", freeze_config({"slow": 4}), 1.0), Candidate("R", freeze_config({"fast": 2}), 1.5),
             Candidate("R", freeze_config({"fast": 4}), 3.0), Candidate("W", freeze_config({"slow": 2}), 1.0)]
    kept = drop_small_moves(cands, (running(), w), SLOW_FAST, 2.0)
    assert [(c.job_id, dict(c.config)) for c in kept] == [("R", {"slow": 4}), ("R", {"fast": 4}), ("W", {"slow": 2})]

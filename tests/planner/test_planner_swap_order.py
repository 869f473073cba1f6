"""Shorter first (planner/swap_order.py through HopsPolicy): with ``swap_shorter`` a fragment swap
requeues the job it displaces only when the waiting job ends first; off (0), swaps are as before."""

from __future__ import annotations

import dataclasses

import pytest

from planner.hops import HopsPolicy
from planner.swap_order import finishes_first
from planner.views import JobView, freeze_config
from tests.planner.test_planner_fragfill import TWO, cluster_of
from planner.params import PlannerParams
from tests.planner.rules_off import rules_off


def with_done(j: JobView, share: float) -> JobView:
    """``j`` with ``share`` of its samples done (its remaining time shrinks with it)."""
    return dataclasses.replace(j, done_samples=share * j.total_samples)


def plan(jobs: tuple[JobView, ...], **params: object):
    params = {"fragment_swaps": True, **params}
    return HopsPolicy(rules_off(gap=0.0, lambda_=1.0, **params)).plan(TWO, jobs, 10_000.0)  # type: ignore[arg-type]


def nearly_done_r() -> tuple[JobView, ...]:
    """X fills n0; R runs on 4 GPUs of n1 with 90 % of its work done (1e5 samples left at 4/s: 25,000 s);
    W (LR 0.15, all 1e6 samples on 8 GPUs: 125,000 s) is worth more than R without the premium."""
    x, r, w = cluster_of(4, (8,), 0.15)
    return x, with_done(r, 0.9), w


def test_without_the_rule_the_waiting_job_displaces_a_nearly_done_job() -> None:
    p = plan(nearly_done_r())
    assert p.diagnostics["swapped"] == {"W": "R"}
    assert p.assignments["R"] is None and p.assignments["W"] == {"n1": 8}


def test_a_waiting_job_that_ends_later_does_not_requeue_a_job_that_ends_sooner() -> None:
    p = plan(nearly_done_r(), swap_shorter=1.0)
    assert p.diagnostics["swapped"] == {}
    assert p.assignments["R"] == {"n1": 4} and p.assignments["W"] is None


def test_a_waiting_job_that_ends_first_still_swaps() -> None:
    # R has none of its work done: 250,000 s left on 4 GPUs, W 125,000 s on 8: W ends first
    p = plan(cluster_of(4, (8,), 0.15), swap_shorter=1.0)
    assert p.diagnostics["swapped"] == {"W": "R"}
    assert p.assignments["W"] == {"n1": 8}


def test_the_ratio_loosens_the_rule() -> None:
    # W needs 5x R's remaining time: refused at 1 and 4, allowed at 5
    assert plan(nearly_done_r(), swap_shorter=4.0).diagnostics["swapped"] == {}
    assert plan(nearly_done_r(), swap_shorter=5.0).diagnostics["swapped"] == {"W": "R"}


def test_off_and_unknown_remaining_times_allow_the_swap() -> None:
    x, r, w = nearly_done_r()
    cfg, r_cfg = freeze_config({"n1": 8}), freeze_config({"n1": 4})
    assert finishes_first(w, cfg, r, r_cfg, 0.0)
    assert not finishes_first(w, cfg, r, r_cfg, 1.0)
    unknown = dataclasses.replace(r, total_samples=0.0, age=0.0)
    assert finishes_first(w, cfg, unknown, r_cfg, 1.0)


def test_the_rule_is_off_by_default_and_validated() -> None:
    assert PlannerParams().swap_shorter == 0.0
    with pytest.raises(ValueError):
        rules_off(swap_shorter=-1.0)


def two_victims(narrow: bool) -> tuple[dict[str, object], dict[str, str]]:
    """n0 full (X); on n1, R1 holds 2 GPUs (worth more), R2 holds 4 (worth less), 2 idle; W (4 or 6 GPUs)
    fits neither the idle GPUs alone, but either R's GPUs with them."""
    from planner.fragfill import swap_for_fragments
    from planner.signatures import Candidate
    from tests.planner.test_planner_fragfill import job

    x = job("X", (8,), 500.0, 1000.0, {"n0": 8})
    r1 = job("R1", (2,), 100.0, 1000.0, {"n1": 2})
    r2 = job("R2", (4,), 100.0, 1000.0, {"n1": 4})
    w = job("W", (4, 6), 15.0, 100.0)
    cfg = {"X": freeze_config({"n0": 8}), "R1": freeze_config({"n1": 2}), "R2": freeze_config({"n1": 4})}
    cands = [Candidate(j, c, 1.0) for j, c in cfg.items()]
    cands += [Candidate("W", freeze_config({"n1": 4}), 1.0), Candidate("W", freeze_config({"n1": 6}), 1.5)]
    chosen = {**cfg, "W": None}
    out, swaps = swap_for_fragments(chosen, (x, w, r1, r2), cands, {"X": 10.0, "R1": 0.2, "R2": 0.1, "W": 1.0},
                                    TWO, {"n0": 8, "n1": 8}, 1.4, 1.5, narrow=narrow)
    return dict(out), swaps


def test_by_default_the_swap_displaces_the_job_of_lowest_worth() -> None:
    out, swaps = two_victims(narrow=False)
    assert swaps == {"W": "R2"} and out["R2"] is None and dict(out["W"]) == {"n1": 6}  # type: ignore[arg-type]


def test_swap_narrow_displaces_the_job_of_fewest_gpus() -> None:
    out, swaps = two_victims(narrow=True)
    assert swaps == {"W": "R1"} and out["R1"] is None and dict(out["W"]) == {"n1": 4}  # type: ignore[arg-type]
    assert dict(out["R2"]) == {"n1": 4}  # type: ignore[arg-type]


def test_swap_narrow_is_on_by_default() -> None:
    assert PlannerParams().swap_narrow is True


def soonest_case(**kw: object) -> dict[str, str]:
    """n0: X (2 GPUs, ends in 50 s) and Y (6 GPUs, ends in ~46 h); n1: R1 (2 GPUs, worth more), R2 (4 GPUs,
    worth less), 2 idle. Displaced, R1 (needs 2) is back on GPUs when X ends, R2 (needs 4) only when Y does."""
    from planner.fragfill import swap_for_fragments
    from planner.signatures import Candidate
    from tests.planner.test_planner_fragfill import job

    x = with_done(job("X", (2,), 500.0, 1000.0, {"n0": 2}), 0.9999)
    y = job("Y", (6,), 500.0, 1000.0, {"n0": 6})
    r1 = job("R1", (2,), 100.0, 1000.0, {"n1": 2})
    r2 = job("R2", (4,), 100.0, 1000.0, {"n1": 4})
    w = job("W", (4, 6), 15.0, 100.0)
    cfg = {"X": freeze_config({"n0": 2}), "Y": freeze_config({"n0": 6}), "R1": freeze_config({"n1": 2}),
           "R2": freeze_config({"n1": 4})}
    cands = [Candidate(j, c, 1.0) for j, c in cfg.items()]
    cands += [Candidate("W", freeze_config({"n1": 4}), 1.0), Candidate("W", freeze_config({"n1": 6}), 1.5)]
    _, swaps = swap_for_fragments({**cfg, "W": None}, (x, y, w, r1, r2), cands,
                                  {"X": 10.0, "Y": 10.0, "R1": 0.2, "R2": 0.1, "W": 1.0}, TWO, {"n0": 8, "n1": 8},
                                  1.4, 1.5, **kw)  # type: ignore[arg-type]
    return swaps


def test_swap_soonest_displaces_the_job_back_on_gpus_first() -> None:
    assert soonest_case() == {"W": "R2"}  # the lowest worth
    assert soonest_case(soonest=True) == {"W": "R1"}  # back when X ends, R2 only when Y does


def test_swap_back_refuses_a_swap_whose_displaced_job_would_wait_long() -> None:
    # by worth R2 is displaced, and it would wait ~46 h for Y's GPUs: refused within an hour, R1 (back in
    # 50 s) is displaced instead; nobody is back within 10 s: no swap
    assert soonest_case(back=3600.0) == {"W": "R1"}
    assert soonest_case(back=10.0) == {}
    assert soonest_case(back=200_000.0) == {"W": "R2"}


def test_swap_back_through_the_policy() -> None:
    # X (n0) ends in 125,000 s: R, displaced, waits that long for GPUs
    jobs = cluster_of(4, (8,), 0.15)
    assert plan(jobs, swap_back=3600.0).diagnostics["swapped"] == {}
    assert plan(jobs, swap_back=200_000.0).diagnostics["swapped"] == {"W": "R"}
    assert PlannerParams().swap_back == 3600.0 and PlannerParams().swap_soonest is False

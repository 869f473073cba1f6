"""Service window (min requirements accumulated to the GPUs planned) and sensitivity adjustment."""

from __future__ import annotations

from planner.views import JobView
from planner.window import select, sensitivity_adjustment, service_window_size


def job(job_id: str, r1: int, sens: float = 1.0) -> JobView:
    return JobView(job_id=job_id, requirements=(r1, r1 * 2), submit_time=0.0, wait=0.0, age=1.0,
                   sensitivity=sens, throughput=lambda c: 1.0)


def test_window_ends_at_the_job_that_reaches_the_gpus() -> None:
    q = [job("a", 4), job("b", 2), job("c", 4), job("d", 1)]
    # 4, 6, 10 ≥ 8 -> window a, b, c
    assert service_window_size(q, 8) == 3
    # exactly reaching counts: 4 + 2 = 6 ≥ 6
    assert service_window_size(q, 6) == 2
    # never reached: whole queue
    assert service_window_size(q, 64) == 4
    # at least the head job
    assert service_window_size(q, 1) == 1


def test_no_window_rule_and_round_plans_have_no_fillers() -> None:
    q = [job("a", 4, 2.0), job("b", 4, 2.0), job("c", 1, 1.0)]
    assert [j.job_id for j in select(q, 4, rule="all").jobs] == ["a", "b", "c"]
    w = select(q, 4, fragment=False)
    assert [j.job_id for j in w.jobs] == ["a"] and w.fillers == ()


def test_sensitivity_adjustment_hand_example() -> None:
    # sensitivities: window [2.0] ; queue mean (2.0 + 1.8 + 1.0 + 1.2 + 1.1) / 5 = 1.42
    q = [job("a", 2, 2.0), job("b", 2, 1.8), job("c", 8, 1.0), job("d", 1, 1.2), job("e", 1, 1.1)]
    # idle 2: window = [a]; ρ_set 2.0 > 1.42. b: 1.8 not < 1.42, skip; c: 1.0 < 1.42 but needs 8 > 2,
    # skip; d: 1.2 fits -> ρ_set (2.0 + 1.2) / 2 = 1.6 still > 1.42; e: 1.1 fits -> 4.3 / 3 = 1.433
    # still > 1.42 and the queue ends.
    assert sensitivity_adjustment(q, 1, 2) == ("d", "e")
    # with more idle GPUs c fits and brings ρ_set to 1.5, d to 1.4 ≤ 1.42: stop before e
    assert sensitivity_adjustment(q, 1, 8) == ("c", "d")
    w = select(q, 2, fragment=True)
    assert [j.job_id for j in w.jobs] == ["a", "d", "e"] and w.size == 1


def test_no_adjustment_when_the_window_is_not_too_sensitive() -> None:
    q = [job("a", 2, 1.0), job("b", 2, 2.0), job("c", 2, 1.0)]
    assert sensitivity_adjustment(q, 1, 4) == ()

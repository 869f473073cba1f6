"""estimator.honesty: re-aging from processed samples, the users' history, verdicts."""

from __future__ import annotations

import math

import pytest

from estimator.honesty import (EXCEEDED, OK, REAGED, HonestyParams, JobOutcome, UserHistory, assess, history_of,
                               ratio)

P = HonestyParams()


def test_honest_job_keeps_its_declared_age() -> None:
    v = assess(1000.0, 400.0, 50.0, UserHistory(), P)
    assert (v.age, v.verdict, v.factor, v.reason) == (50.0, OK, 1.0, "")


def test_small_overrun_is_forgiven() -> None:
    v = assess(1000.0, 1040.0, 50.0, UserHistory(), P)
    assert v.verdict == OK and v.age == 50.0


def test_job_past_its_declaration_is_reaged_from_what_it_did() -> None:
    v = assess(1000.0, 1500.0, 50.0, UserHistory(), P)
    assert v.verdict == REAGED
    assert v.factor == pytest.approx(1500.0 * (1 + P.headroom) / 1000.0)
    assert v.age == pytest.approx(50.0 * v.factor)
    assert "1.5x its declared" in v.reason


def test_exceeding_by_the_margin_is_exceeded() -> None:
    v = assess(1000.0, 1000.0 * (1 + P.margin) + 1, 50.0, UserHistory(), P)
    assert v.verdict == EXCEEDED


def test_defences_off_keep_the_declared_age_but_still_judge() -> None:
    off = HonestyParams(enabled=False)
    v = assess(10.0, 1000.0, 5.0, UserHistory(factor=7.0, jobs=1, worst_ratio=7.0), off)
    assert v.age == 5.0 and v.verdict == EXCEEDED and v.factor == 1.0


def test_history_forgives_few_percent_and_takes_the_worst_recent_ratio() -> None:
    assert history_of([JobOutcome(100, 104), JobOutcome(100, 90)], P).factor == 1.0
    h = history_of([JobOutcome(100, 100), JobOutcome(10, 300), JobOutcome(100, 80)], P)
    assert h.factor == pytest.approx(30.0) and h.jobs == 3 and h.worst_ratio == pytest.approx(30.0)


def test_history_counts_only_recent_jobs_and_is_capped() -> None:
    p = HonestyParams(history_jobs=2, history_cap=50.0)
    assert history_of([JobOutcome(1, 100), JobOutcome(10, 10), JobOutcome(10, 10)], p).factor == 1.0
    assert history_of([JobOutcome(1, 1000)], p).factor == 50.0
    assert history_of([JobOutcome(1, 1000)], HonestyParams(history_jobs=0)).jobs == 0


def test_overstating_never_lowers_the_age() -> None:
    h = history_of([JobOutcome(1000, 10)], P)
    assert h.factor == 1.0
    assert assess(1000.0, 10.0, 80.0, h, P).age == 80.0


def test_history_raises_the_age_of_a_new_job() -> None:
    h = history_of([JobOutcome(10, 1000)], P)
    v = assess(10.0, 0.0, 3.0, h, P)
    assert v.age == pytest.approx(300.0) and v.verdict == OK and "history" in v.reason


def test_zero_declaration_and_bad_numbers() -> None:
    assert ratio(0.0, 0.0) == 1.0 and math.isinf(ratio(0.0, 5.0))
    v = assess(0.0, 5.0, 1.0, UserHistory(), P)
    assert v.verdict == EXCEEDED and math.isfinite(v.age)
    with pytest.raises(ValueError):
        ratio(math.nan, 1.0)
    with pytest.raises(ValueError):
        HonestyParams(tolerance=-1.0)
    with pytest.raises(ValueError):
        HonestyParams(history_cap=0.5)


def test_history_keeps_every_job_while_the_user_has_fewer_than_history_jobs() -> None:
    # 3 jobs against a window of 4 (N/2 < len < N): all three count, the oldest included
    p = HonestyParams(history_jobs=4)
    h = history_of([JobOutcome(1, 30), JobOutcome(10, 10), JobOutcome(10, 10)], p)
    assert h.jobs == 3 and h.factor == 30.0
    # more than the window: only the last 4 count
    h = history_of([JobOutcome(1, 30), *[JobOutcome(10, 10)] * 4], p)
    assert h.jobs == 4 and h.factor == 1.0

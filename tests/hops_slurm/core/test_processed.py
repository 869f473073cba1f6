"""hops_slurm.core.processed: a job's processed samples per run (restart time is not progress, redone
samples count once, never above what its records justify) and the restart cost each run shows, on the
ledger both backends keep (hops_slurm.core.ledger)."""

from __future__ import annotations

import random

import pytest

from hops_slurm.core.ledger import JobLedger, account
from hops_slurm.core.processed import NOTICE, Window, note_window, processed_samples

CONFIG = {"n1": 4}


def _no_rate(config: object) -> None:
    return None


def _ledger(*runs: tuple[float, float | None]) -> JobLedger:
    """A job submitted at 0 that ran ``runs`` ((start, end); end None: still running), preempted between."""
    ledger = JobLedger(last_seen=0.0)
    for start, end in runs:
        account(ledger, start, "RUNNING", dict(CONFIG), started=start)
        if end is not None:
            account(ledger, end, "PENDING", {})
    return ledger


def test_the_time_from_a_start_to_its_first_record_is_not_progress() -> None:
    ledger = _ledger((100.0, None))
    # 100 samples/s; the first window began 30 s after Slurm started the job (imports, checkpoint load)
    assert note_window(ledger, Window(3000.0, 30.0, end=160.0), now=165.0) == 30.0
    assert processed_samples(ledger, 200.0, rate=lambda c: 500.0, restart=0.0) == 3000.0 + 40.0 * 100.0
    assert note_window(ledger, Window(4000.0, 40.0, end=200.0), now=200.0) is None  # not the run's first
    assert processed_samples(ledger, 200.0, rate=_no_rate, restart=0.0) == 7000.0


def test_a_run_without_a_record_yet_counts_nothing_once_the_job_writes_records() -> None:
    ledger = _ledger((0.0, 100.0), (200.0, None))
    note_window(ledger, Window(5000.0, 50.0, end=100.0), now=100.0)
    # run 2 started 60 s ago and has written nothing yet: it is restarting, not progressing
    assert processed_samples(ledger, 260.0, rate=lambda c: 100.0, restart=10.0) == 5000.0


def test_an_ended_run_counts_nothing_after_its_last_record() -> None:
    ledger = _ledger((0.0, 100.0))
    note_window(ledger, Window(2000.0, 20.0, end=30.0), now=30.0)
    note_window(ledger, Window(2000.0, 20.0, end=60.0), now=60.0)  # 10 s between the two windows
    assert processed_samples(ledger, 500.0, rate=_no_rate, restart=0.0) == 4000.0 + 10.0 * 100.0  # not 60..100


def test_a_job_without_records_counts_its_run_time_less_a_restart_per_run() -> None:
    ledger = _ledger((0.0, 100.0), (200.0, 260.0), (300.0, None))
    got = processed_samples(ledger, 305.0, rate=lambda c: 5.0 if c == CONFIG else None, restart=10.0)
    assert got == (90.0 + 50.0 + 0.0) * 5.0


def test_the_restart_cost_adds_the_notice_before_the_requeue() -> None:
    ledger = _ledger((0.0, 100.0), (200.0, 400.0), (500.0, None))
    assert note_window(ledger, Window(100.0, 10.0, end=20.0), now=20.0) == 10.0  # the first start: no notice
    ledger.placements[0][NOTICE] = 25.0  # the notice step: 25 s from the signal to the requeue
    ledger.placements[1][NOTICE] = "garbage"  # never trusted blindly: counts as none
    assert note_window(ledger, Window(100.0, 10.0, end=250.0), now=250.0) == 40.0 + 25.0
    assert note_window(ledger, Window(100.0, 10.0, end=530.0), now=530.0) == 20.0


def test_the_last_window_of_a_moved_run_read_after_the_next_start_stays_with_its_run() -> None:
    ledger = _ledger((0.0, 100.0), (100.0, None))  # moved at 100: requeued and started at once elsewhere
    note_window(ledger, Window(600.0, 60.0, end=70.0), now=70.0)
    # read at the next refresh, after the new run started: its last window (70..100) and the new run's first
    assert note_window(ledger, Window(300.0, 30.0, end=100.0), now=150.0) is None
    assert note_window(ledger, Window(200.0, 20.0, end=140.0), now=150.0) == 20.0
    assert ledger.placements[0]["rec_samples"] == 900.0 and ledger.placements[1]["rec_samples"] == 200.0


def test_window_times_are_clamped_to_the_job_s_runs() -> None:
    ledger = _ledger((100.0, None))
    assert note_window(ledger, Window(100.0, 10.0, end=1.0e12), now=200.0) == 90.0  # from the future: ends now
    assert note_window(_ledger((100.0, None)), Window(100.0, 10.0, end=-5.0), now=200.0) == 0.0  # before it ran
    assert note_window(JobLedger(last_seen=0.0), Window(100.0, 10.0, end=5.0), now=10.0) is None  # never ran
    assert note_window(ledger, Window(float("nan"), 10.0, end=150.0), now=200.0) is None


def test_samples_a_resumed_job_redoes_count_once() -> None:
    ledger = _ledger((0.0, 100.0), (150.0, None))
    for k in range(1, 11):  # run 1: 10/s, its count at each window's end
        note_window(ledger, Window(100.0, 10.0, end=10.0 * k, done=100.0 * k), now=10.0 * k)
    assert processed_samples(ledger, 100.0, rate=_no_rate, restart=0.0) == 1000.0
    # requeued at 100 without notice: its last checkpoint had 800; run 2 redoes 800..1000
    note_window(ledger, Window(100.0, 10.0, end=170.0, done=900.0), now=170.0)
    assert processed_samples(ledger, 170.0, rate=_no_rate, restart=0.0) == 900.0
    note_window(ledger, Window(200.0, 20.0, end=190.0, done=1100.0), now=190.0)
    assert processed_samples(ledger, 190.0, rate=_no_rate, restart=0.0) == 1100.0


def test_a_job_s_count_cannot_lower_its_run_s_own_samples_nor_raise_what_records_justify() -> None:
    low = _ledger((0.0, 100.0), (150.0, None))
    note_window(low, Window(1000.0, 100.0, end=100.0, done=1000.0), now=100.0)
    note_window(low, Window(500.0, 50.0, end=200.0, done=0.0), now=200.0)  # "resumed from nothing": says 0
    assert processed_samples(low, 200.0, rate=_no_rate, restart=0.0) == 500.0  # its own run's records at least
    high = _ledger((0.0, 100.0), (150.0, None))
    note_window(high, Window(1000.0, 100.0, end=100.0, done=1000.0), now=100.0)
    note_window(high, Window(500.0, 50.0, end=200.0, done=9.0e9), now=200.0)
    assert processed_samples(high, 200.0, rate=_no_rate, restart=0.0) == 1500.0  # not above the records


def _honest_job(seed: int, counts: bool) -> tuple[float, list[float]]:
    """An honest job of ``declared`` samples at 50/s, checkpointing every 40 s, preempted at random; each
    start takes 5-60 s before its first step; its recorder writes a window every 30 s and one when it
    stops. ``counts``: its records carry its count (a requeue without notice loses what followed the last
    checkpoint, redone after the restart); without counts it checkpoints on notice (loses nothing).
    Returns the declaration and the engine's estimate at every refresh (15 s) and at the end."""
    rng = random.Random(seed)
    declared, rate = 60000.0, 50.0
    ledger, t, done, saved, seen = JobLedger(last_seen=0.0), 0.0, 0.0, 0.0, []
    while done < declared:
        t += rng.uniform(0.0, 200.0)  # waits
        account(ledger, t, "RUNNING", dict(CONFIG), started=t)
        done = saved if counts else done  # resumes from its checkpoint
        start, stop = t, t + rng.uniform(30.0, 900.0)
        clock = t + rng.uniform(5.0, 60.0)  # first step after the restart
        window_start, last_ckpt, refresh = clock, clock, t
        while clock < stop and done < declared:
            dt = min(1.0, stop - clock, (declared - done) / rate)
            clock, done = clock + dt, min(declared, done + rate * dt)
            if clock - last_ckpt >= 40.0:
                saved, last_ckpt = done, clock
            if clock - window_start >= 30.0 or done >= declared or clock >= stop:  # a window (the last at stop)
                samples = rate * (clock - window_start)
                note_window(ledger, Window(samples, clock - window_start, end=clock, done=done if counts else None),
                            now=clock)
                window_start = clock
            if clock - refresh >= 15.0:
                refresh = clock
                seen.append(processed_samples(ledger, clock, rate=lambda c: rate, restart=30.0))
        if not counts:
            saved = done  # checkpointed on notice
        t = max(clock, start)
        account(ledger, t, "PENDING" if done < declared else "ENDED", {})
        seen.append(processed_samples(ledger, t, rate=lambda c: rate, restart=30.0))
    return declared, seen


@pytest.mark.parametrize("counts", [True, False])
@pytest.mark.parametrize("seed", range(8))
def test_an_honest_preempted_job_is_never_counted_above_its_declaration(seed: int, counts: bool) -> None:
    declared, seen = _honest_job(seed, counts)
    assert max(seen) <= declared * (1 + 1e-9)
    assert seen[-1] == pytest.approx(declared, rel=1e-6)  # and, when it ends, it did what it declared


def test_the_kept_sum_of_closed_runs_equals_counting_every_run_again() -> None:
    """:func:`processed_samples` keeps the sum of a job's closed runs between calls; whatever comes in
    between (new runs, late windows into closed runs, resumed counts), it answers as a fresh count does."""
    from hops_slurm.core import processed

    rng = random.Random(5)
    ledger = _ledger((0.0, None))
    t = 0.0
    for step in range(300):
        t += rng.uniform(5.0, 60.0)
        run = ledger.placements[-1]
        if run["end"] is None and rng.random() < 0.2:  # moved: a new run
            run["end"] = t
            t += rng.uniform(1.0, 20.0)
            ledger.placements.append({"start": t, "end": None, "config": {"n1": 1}})
        else:  # a window, now and then one that ends in an earlier run (read late)
            end = t if rng.random() < 0.8 else rng.uniform(0.0, t)
            done = rng.uniform(0.0, 50.0 * step) if rng.random() < 0.3 else None
            note_window(ledger, Window(samples=rng.uniform(10, 100), seconds=rng.uniform(1, 30), end=end, done=done), t)
        got = processed_samples(ledger, t, rate=_no_rate, restart=5.0)
        processed._CLOSED.clear()
        assert got == processed_samples(ledger, t, rate=_no_rate, restart=5.0), step
    assert len(ledger.placements) > 20

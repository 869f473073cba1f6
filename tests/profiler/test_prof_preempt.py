"""The job side of preemption with notice (profiler.preempt): the signal sets ``requested``, a checkpoint
after it writes the mark that answers it, Slurm's SIGTERM ends the wait; every mark is a bounded,
validated CheckpointMark line, and nothing the helper meets stops the training loop."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from profiler.preempt import GRACE_ENV, SIGNAL_ENV, Preemption, receives_batch_signal, signal_number
from profiler.records import MAX_TOTAL_SAMPLES, CheckpointMark, parse_record


@pytest.fixture
def handlers() -> Iterator[None]:
    """The test process's own handlers are put back whatever a test leaves."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM)}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def marks(path: Path) -> list[CheckpointMark]:
    out = []
    for line in path.read_text().splitlines():
        rec = parse_record(line)
        assert isinstance(rec, CheckpointMark)
        out.append(rec)
    return out


def test_the_signal_sets_requested_and_the_next_checkpoint_answers_it(tmp_path: Path, handlers: None) -> None:
    path = tmp_path / "runtime.jsonl"
    pre = Preemption(path, signal_name="USR1", grace=30, run=2, clock=lambda: 1_800_000_000.0)
    pre.checkpointed(100)  # a regular checkpoint
    assert not pre.requested
    os.kill(os.getpid(), signal.SIGUSR1)
    assert pre.requested and not pre.answered and not pre.stopping
    pre.checkpointed(160)
    assert pre.answered
    pre.checkpointed(170)  # a later one answers nothing more
    got = marks(path)
    assert [(m.event, m.samples, m.notice, m.run) for m in got] == [
        ("listening", 0, False, 2), ("saved", 100, False, 2), ("saved", 160, True, 2), ("saved", 170, False, 2)]
    assert got[0].signal == "USR1" and got[1].measured_at.timestamp() == 1_800_000_000.0
    pre.close()
    assert signal.getsignal(signal.SIGUSR1) is not pre._on_notice


def test_await_requeue_ends_on_sigterm_and_answers_a_second_notice(tmp_path: Path, handlers: None) -> None:
    path = tmp_path / "runtime.jsonl"
    pre = Preemption(path, signal_name="USR2", grace=1)
    os.kill(os.getpid(), signal.SIGUSR2)
    pre.checkpointed(50)
    # a second notice while it waits (the engine restarted and gave notice again), then Slurm's SIGTERM
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR2)).start()
    threading.Timer(0.8, os.kill, (os.getpid(), signal.SIGTERM)).start()
    assert pre.await_requeue(timeout=30, poll=0.05) is True
    assert pre.stopping and pre.notices == 2
    assert [(m.event, m.samples, m.notice) for m in marks(path)] == [
        ("listening", 0, False), ("saved", 50, True), ("saved", 50, True)]
    pre.close()


def test_without_a_requeue_the_notice_is_forgotten_and_the_job_trains_on(tmp_path: Path, handlers: None) -> None:
    pre = Preemption(tmp_path / "runtime.jsonl", grace=0)
    os.kill(os.getpid(), signal.SIGUSR1)
    pre.checkpointed(10)
    assert pre.await_requeue(timeout=0.1, poll=0.02) is False
    assert not pre.requested and not pre.stopping
    pre.checkpointed(20)
    assert [m.notice for m in marks(tmp_path / "runtime.jsonl")] == [False, True, False]
    pre.close()


def test_marks_are_bounded_and_an_unwritable_file_never_stops_the_loop(tmp_path: Path, handlers: None) -> None:
    pre = Preemption(tmp_path / "runtime.jsonl", receives=False)
    pre.checkpointed(10**30)  # clamped, not a validation error in the training loop
    pre.checkpointed(-5)
    assert [(m.event, m.samples) for m in marks(tmp_path / "runtime.jsonl")] == [("saved", MAX_TOTAL_SAMPLES), ("saved", 0)]
    pre.close()
    gone = Preemption(tmp_path / "no-such-dir" / "runtime.jsonl")  # cannot be written: logged only
    gone.checkpointed(5)
    assert gone.marks_written == 0
    gone.close()
    quiet = Preemption(None)  # no metrics file: the handler still works, nothing is written
    os.kill(os.getpid(), signal.SIGUSR1)
    assert quiet.requested and quiet.marks_written == 0
    quiet.close()


def test_a_process_the_batch_signal_does_not_reach_never_says_it_listens(tmp_path: Path, handlers: None,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_TASK_PID", str(os.getpid()))
    monkeypatch.delenv("SLURM_STEP_ID", raising=False)
    assert receives_batch_signal()  # the batch script exec'd this python
    monkeypatch.setenv("SLURM_TASK_PID", str(os.getpid() + 1))
    assert not receives_batch_signal()  # a child of the batch shell: the shell gets the signal
    assert receives_batch_signal(forwarded=True)  # ... unless the script traps and forwards it
    monkeypatch.setenv("SLURM_STEP_ID", "0")
    monkeypatch.setenv("SLURM_TASK_PID", str(os.getpid()))
    assert not receives_batch_signal()  # an srun task
    monkeypatch.setenv("HOPS_METRICS_FILE", str(tmp_path / "runtime.jsonl"))
    pre = Preemption.from_env()
    pre.checkpointed(3)
    assert [m.event for m in marks(tmp_path / "runtime.jsonl")] == ["saved"]  # no "listening"
    pre.close()


def test_from_env_reads_the_protocol_and_falls_back_on_nonsense(tmp_path: Path, handlers: None,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("SLURM_TASK_PID", "SLURM_STEP_ID", "RANK", "SLURM_PROCID"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOPS_METRICS_FILE", str(tmp_path / "runtime.jsonl"))
    monkeypatch.setenv(SIGNAL_ENV, "USR2")
    monkeypatch.setenv(GRACE_ENV, "15")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "3")
    pre = Preemption.from_env()
    assert (pre.signum, pre.grace, pre.run) == (signal.SIGUSR2, 15.0, 3)
    pre.close()
    monkeypatch.setenv(SIGNAL_ENV, "KILL")
    monkeypatch.setenv(GRACE_ENV, "nan")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "-1")
    pre = Preemption.from_env()
    assert (pre.signum, pre.grace, pre.run) == (signal.SIGUSR1, 120.0, 0)
    pre.close()
    monkeypatch.setenv("RANK", "1")  # only rank 0 writes
    (tmp_path / "runtime.jsonl").unlink()
    pre = Preemption.from_env()
    pre.checkpointed(1)
    assert not (tmp_path / "runtime.jsonl").exists()
    pre.close()


def test_only_catchable_signals_other_than_sigterm_may_carry_the_notice() -> None:
    assert signal_number("USR1") == signal.SIGUSR1
    for bad in ("TERM", "KILL", "STOP", "SIGUSR1", "usr1", ""):
        with pytest.raises(ValueError):
            signal_number(bad)


@pytest.mark.parametrize("fields", [
    {"event": "listening", "samples": 5},
    {"event": "listening", "notice": True},
    {"event": "saved", "signal": "USR1"},
    {"event": "saved", "samples": -1},
    {"event": "saved", "samples": MAX_TOTAL_SAMPLES + 1},
    {"event": "saved", "run": -1},
    {"event": "listening", "signal": "USR1; rm -rf /"},
    {"event": "paused"},
    {"event": "saved", "extra": 1},
])
def test_a_checkpoint_mark_is_validated(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        parse_record(json.dumps({"kind": "checkpoint", **fields}))


def test_a_declined_notice_gets_no_answer_and_later_checkpoints_are_regular(tmp_path: Path, handlers: None) -> None:
    pre = Preemption(tmp_path / "runtime.jsonl", receives=False)
    os.kill(os.getpid(), signal.SIGUSR1)
    pre.decline()  # it will finish within the grace
    assert not pre.requested and pre.answered
    pre.checkpointed(10)
    os.kill(os.getpid(), signal.SIGUSR1)  # a later notice is a new one
    pre.checkpointed(20)
    assert [m.notice for m in marks(tmp_path / "runtime.jsonl")] == [False, True]
    pre.close()


@pytest.mark.parametrize(("step", "receives"), [("", True), ("-5", True), ("4294967291", True), ("batch", True),
                                                ("0", False), ("12", False)])
def test_the_batch_step_receives_the_notice_and_an_srun_step_does_not(monkeypatch: pytest.MonkeyPatch, step: str,
                                                                      receives: bool) -> None:
    # Slurm 26.05 sets SLURM_STEP_ID=-5 (SLURM_BATCH_SCRIPT) in the batch step; up to 24.11 it is unset there
    from profiler.preempt import receives_batch_signal

    monkeypatch.delenv("SLURM_TASK_PID", raising=False)
    if step:
        monkeypatch.setenv("SLURM_STEP_ID", step)
    else:
        monkeypatch.delenv("SLURM_STEP_ID", raising=False)
    assert receives_batch_signal() is receives

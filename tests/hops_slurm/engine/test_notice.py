"""The enactor's notice before a planned requeue (hops_slurm.slurm.notice), against the stand-in slurmctld
on a virtual clock: a job that checkpoints is requeued as soon as it has, one that ignores the notice at
the grace's end, one that ends meanwhile never; a job that does not listen is not signalled; a crash
during the notice leaves nothing for recovery to repair. The live test (test_notice_live.py) shows the
same with real Slurm and a real job."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hops_slurm.journal import Journal
from hops_slurm.slurm.api import SlurmCommandError
from hops_slurm.slurm.enact import Enactor
from hops_slurm.slurm.notice import NoticeSettings
from hops_slurm.slurm.reconcile import reconcile
from hops_slurm.slurm.snapshot import GATE
from standin import StandInSlurm

JOB = "gpus=1,2 samples=1000 batch-size=8 model=resnet18"
GRACE = 30.0
T0 = 5000.0


class Crashed(BaseException):
    """The engine process ended here (nothing in the engine catches a BaseException)."""


class Setup:
    """A stand-in with running jobs, an enactor whose notice waits in the stand-in's virtual time, and the
    engine's answers to "does it listen" and "has it answered" as sets a test fills."""

    def __init__(self, tmp_path: Path, *jobs: str) -> None:
        self.api = StandInSlurm(starts=True)
        self.api.clock = T0
        self.listening: set[str] = set(jobs)
        self.answers: set[str] = set()
        self.journal = Journal(tmp_path / "journal.sqlite")
        self.enactor = Enactor(self.api, self.journal, env_dir=tmp_path / "env", settle_timeout=0.05, poll=0.0,
                               requeue_grace=0.0, notice=NoticeSettings("USR1", GRACE, poll=1.0),
                               listening=lambda job: job.job_id in self.listening,
                               answered=lambda job_id, since: job_id in self.answers)
        self.enactor.notifier.pause = self.api.sleep
        for i, job_id in enumerate(jobs):
            self.api.submit(job_id, JOB)
            self.api._change(job_id, state="RUNNING", reason="None", nodes=("n1",), gpu_alloc={"n1": (i,)},
                             start_time=T0 - 600)

    def calls(self, job_id: str) -> list[str]:
        return [c[0] for c in self.api.calls if len(c) > 1 and job_id in c[1].split(",")]  # a list: one command for many

    def on_signal(self, act: Callable[[str], None]) -> None:
        self.api.on_signal = lambda job_id, sig: act(job_id)


def test_a_job_that_checkpoints_is_requeued_as_soon_as_it_has(tmp_path: Path) -> None:
    s = Setup(tmp_path, "1")
    s.on_signal(s.answers.add)  # the job saves at once and says so
    result = s.enactor.apply({"1": {"n2": 1}})  # moved to n2: a planned requeue
    notice = result.notices["1"]
    assert notice.given and notice.answered and not notice.ended
    assert notice.decided_at is not None and notice.given_at is not None
    assert notice.decided_at < notice.given_at + GRACE  # not held to the grace's end
    assert result.preempted == ["1"] and result.started == ["1"]
    calls = s.calls("1")
    assert calls.index("signal") < calls.index("requeuehold") < calls.index("release")
    assert ("signal", "1", "USR1") in s.api.calls
    assert [a.kind for a in s.journal.actions(job_id="1")][:2] == ["notice", "requeuehold"]


def test_a_job_that_ignores_the_notice_is_requeued_at_the_graces_end(tmp_path: Path) -> None:
    s = Setup(tmp_path, "1")
    result = s.enactor.apply({"1": {"n2": 1}})
    notice = result.notices["1"]
    assert notice.given and not notice.answered and not notice.ended
    assert notice.given_at is not None and notice.decided_at is not None
    assert notice.decided_at >= notice.given_at + GRACE
    assert result.preempted == ["1"] and result.started == ["1"]
    assert s.calls("1").index("signal") < s.calls("1").index("requeuehold")


def test_a_job_that_ends_during_its_notice_is_never_requeued_nor_placed(tmp_path: Path) -> None:
    s = Setup(tmp_path, "1", "2")
    ends_at = T0 + 7.0  # job 1 reaches its samples a few seconds into its notice; job 2 answers at once

    def pause(seconds: float) -> None:
        s.api.sleep(seconds)
        if s.api.clock is not None and s.api.clock >= ends_at and s.api.get("1").active:
            s.api.end("1")

    s.enactor.notifier.pause = pause
    s.on_signal(lambda job_id: s.answers.add(job_id) if job_id == "2" else None)
    result = s.enactor.apply({"1": {"n2": 1}, "2": None})
    assert result.notices["1"].ended and not result.notices["1"].answered
    assert result.ended == ["1"] and result.preempted == ["2"]
    assert "requeuehold" not in s.calls("1") and "release" not in s.calls("1") and "hold" not in s.calls("1")
    assert s.api.get("1").state == "COMPLETED" and s.api.get("1").restart_count == 0
    assert "1" not in result.started and "1" not in result.refused


def test_a_job_that_ends_just_before_its_requeue_is_left_ended(tmp_path: Path) -> None:
    s = Setup(tmp_path, "1")
    s.on_signal(s.answers.add)
    requeue = s.api.requeue_hold

    def ends_first(job_id: str) -> None:  # it exits between the engine's look and requeuehold Incomplete
        s.api.end(job_id)
        requeue(job_id)

    s.api.requeue_hold = ends_first  # type: ignore[method-assign]
    result = s.enactor.apply({"1": {"n2": 1}})
    assert result.ended == ["1"] and result.preempted == [] and result.started == []
    assert s.api.get("1").state == "COMPLETED" and "hold" not in s.calls("1")


def test_a_job_that_does_not_listen_is_requeued_at_once_without_a_signal(tmp_path: Path) -> None:
    s = Setup(tmp_path, "1", "2")
    s.listening = {"2"}
    s.on_signal(s.answers.add)
    result = s.enactor.apply({"1": {"n2": 1}, "2": {"n2": 1}})
    assert not result.notices["1"].given and result.notices["2"].given
    assert "signal" not in s.calls("1") and sorted(result.preempted) == ["1", "2"]


@pytest.mark.parametrize("what", ["signal refused", "listening raises", "answered raises", "grace 0"])
def test_no_notice_or_a_failed_one_still_requeues(tmp_path: Path, what: str) -> None:
    s = Setup(tmp_path, "1")
    if what == "signal refused":
        def refuse(job_id: str, sig: str) -> None:
            raise SlurmCommandError(["scancel"], 1, "Access/permission denied")
        s.api.signal_job = refuse  # type: ignore[method-assign]
    elif what == "listening raises":
        s.enactor.notifier.listening = lambda job: 1 / 0  # type: ignore[assignment,return-value]
    elif what == "answered raises":
        s.enactor.notifier.answered = lambda job_id, since: 1 / 0  # type: ignore[assignment,return-value]
    else:
        s.enactor.notifier.settings = NoticeSettings("USR1", 0.0)
    result = s.enactor.apply({"1": {"n2": 1}})
    assert result.preempted == ["1"] and result.started == ["1"]
    assert result.notices["1"].given == (what == "answered raises")
    assert not result.notices["1"].answered


def test_a_crash_during_the_notice_leaves_nothing_to_repair(tmp_path: Path) -> None:
    s = Setup(tmp_path, "1")

    def crash(seconds: float) -> None:
        raise Crashed("engine killed while it waited for the job's checkpoint")

    s.enactor.notifier.pause = crash
    with pytest.raises(Crashed):
        s.enactor.apply({"1": {"n2": 1}})
    assert [a.kind for a in s.journal.actions(job_id="1")] == ["notice"]  # the signal went out, nothing else
    report = reconcile(s.api, Journal(tmp_path / "journal.sqlite"), timeout=0.1)
    assert not report.interrupted and not report.held and not report.rolled_back
    job = s.api.get("1")
    assert job.state == "RUNNING" and job.gpu_config() == {"n1": 1} and job.reservation == ""
    assert {r.name for r in s.api.reservations()} == {GATE}
    assert not Journal(tmp_path / "journal.sqlite").open_actions()

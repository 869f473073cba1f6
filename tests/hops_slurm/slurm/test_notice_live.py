"""Preemption with notice on the live minicluster (Slurm 22.05): real batch jobs using profiler.preempt
(tests/data/notice_job.py, which ``exec``s python as the demo jobs do), the enactor with the engine's
reader of checkpoint marks (hops_slurm.engine.checkpoints.Marks), ``scancel --batch --signal`` and
``scontrol requeuehold Incomplete``.

* A job that checkpoints on notice gets the signal before its requeue, is requeued as soon as its mark
  is read, and loses no work: its samples after the restart equal those of its notice checkpoint.
* A job that ignores the notice is requeued at the grace's end; one that finishes during it is never
  requeued; a job that does not listen (a plain script, or python as a child of a shell that would die
  of the signal) gets no signal and is requeued at once, alive.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hops_slurm.engine.checkpoints import Marks
from hops_slurm.engine.runtime_records import RUNTIME_FILE
from hops_slurm.engine.state import EngineState, JobState
from hops_slurm.engine.userfiles import Owner, make_place
from hops_slurm.journal import Journal
from hops_slurm.slurm.cli import CliSlurm
from hops_slurm.slurm.enact import EnactResult, Enactor
from hops_slurm.slurm.notice import NoticeSettings

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[3]
JOB = ROOT / "tests" / "data" / "notice_job.py"
ROOT_OWNER = Owner("root", 0, 0)


@dataclass
class Notices:
    """An enactor giving notice with ``grace``, the engine's mark reader behind it, and the jobs' places."""

    api: CliSlurm
    enactor: Enactor
    marks: Marks
    tracked: dict[str, JobState]
    metrics: Path
    workdir: Path
    grace: float

    def body(self, mode: str, exec_python: bool = True) -> str:
        run = f"{sys.executable} {JOB} {self.workdir} {mode}"
        return (f'set -a; . "{self.enactor.env_dir}/$SLURM_JOB_ID.env"; set +a\nexport PYTHONPATH={ROOT}\n'
                + (f"exec {run}" if exec_python else f"{run}\necho shell-after-python"))

    def track(self, job_id: str) -> None:
        self.tracked[job_id] = JobState(job_id=job_id, name="notice", user="root", directives="", submit_time=time.time(),
                                        first_seen=time.time(), last_seen=time.time(), last_state="PENDING")
        make_place(self.metrics, job_id, ROOT_OWNER)

    def apply(self, plan: dict[str, dict[str, int]]) -> EnactResult:
        env = {j: {"HOPS_METRICS_FILE": str(self.metrics / j / RUNTIME_FILE), "HOPS_PREEMPT_SIGNAL": "USR1",
                   "HOPS_PREEMPT_GRACE": f"{self.grace:g}"} for j in plan}
        result = self.enactor.apply(plan, job_env=env)
        assert sorted(result.started) == sorted(plan) and sorted(result.verified) == sorted(plan), result
        return result

    def log(self, job_id: str) -> list[tuple[float, str]]:
        path = self.workdir / f"{job_id}.log"
        if not path.exists():
            return []
        return [(float(t), text) for t, text in (ln.split(" ", 1) for ln in path.read_text().splitlines())]

    def wait_log(self, job_id: str, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            for _t, text in self.log(job_id):
                if m := re.fullmatch(pattern, text):
                    return m
            assert time.monotonic() < deadline, f"job {job_id}: no log line {pattern!r} in {timeout} s: {self.log(job_id)}"
            time.sleep(0.2)

    def at(self, job_id: str, prefix: str) -> float:
        return next(t for t, text in self.log(job_id) if text.startswith(prefix))

    def listening(self, job_id: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.marks.listening(self.api.job(job_id)):  # type: ignore[arg-type]
            assert time.monotonic() < deadline, f"job {job_id} never said it listens: {self.log(job_id)}"
            time.sleep(0.2)


def _notices(api: CliSlurm, workdir: Path, state_dir: Path, grace: float) -> Iterator[Notices]:
    state = EngineState(state_dir / "engine.sqlite")
    tracked: dict[str, JobState] = {}
    marks = Marks(state, state_dir / "metrics", lambda: tracked, lambda user: ROOT_OWNER, api.now)
    enactor = Enactor(api, Journal(state_dir / "journal.sqlite"), env_dir=state_dir / "jobenv", settle_timeout=20.0,
                      notice=NoticeSettings("USR1", grace, poll=0.5), listening=marks.listening, answered=marks.answered)
    yield Notices(api, enactor, marks, tracked, state_dir / "metrics", workdir, grace)
    state.close()


@pytest.fixture
def notices(api: CliSlurm, workdir: Path, tmp_path: Path) -> Iterator[Notices]:
    yield from _notices(api, workdir, tmp_path, grace=60.0)


@pytest.fixture
def short_notices(api: CliSlurm, workdir: Path, tmp_path: Path) -> Iterator[Notices]:
    yield from _notices(api, workdir, tmp_path, grace=4.0)


def test_the_signal_comes_before_the_requeue_and_a_job_that_checkpoints_loses_no_work(notices: Notices, submit, live) -> None:  # noqa: ANN001
    job = submit(notices.body("answer"))
    notices.track(job)
    notices.apply({job: {"v100-1": 1}})
    notices.listening(job)
    notices.wait_log(job, r"start run=0 samples=0")
    time.sleep(2.5)  # some work, and a regular checkpoint or two
    result = notices.apply({job: {"v100-2": 1}})  # a move: notice, checkpoint, requeue, restart
    notice = result.notices[job]
    assert notice.given and notice.answered and not notice.ended and result.preempted == [job]
    assert notice.given_at is not None and notice.decided_at is not None
    assert notice.decided_at < notice.given_at + notices.grace  # requeued on its answer, not at the grace's end
    answered = int(notices.wait_log(job, r"answered samples=(\d+)").group(1))
    stopped = int(notices.wait_log(job, r"term samples=(\d+)").group(1))
    resumed = int(notices.wait_log(job, r"start run=1 samples=(\d+)").group(1))
    assert notices.at(job, "notice") < notices.at(job, "term")  # the signal arrived before the requeue
    assert answered > 0 and stopped == answered and resumed == answered  # no work lost
    running = live.wait_job(notices.api, job, lambda j: j.state == "RUNNING" and j.restart_count == 1)
    assert running.gpu_config() == {"v100-2": 1}
    # the engine's view: this run listens again and the last notice was answered
    notices.listening(job)
    assert notices.marks.answered(job, notice.given_at)


def test_a_job_that_ignores_the_notice_is_requeued_at_the_graces_end(short_notices: Notices, submit, live) -> None:  # noqa: ANN001
    job = submit(short_notices.body("ignore"))
    short_notices.track(job)
    short_notices.apply({job: {"v100-1": 1}})
    short_notices.listening(job)
    result = short_notices.apply({job: {"v100-2": 1}})
    notice = result.notices[job]
    assert notice.given and not notice.answered and not notice.ended and result.preempted == [job]
    assert notice.given_at is not None and notice.decided_at is not None
    assert notice.decided_at >= notice.given_at + short_notices.grace
    short_notices.wait_log(job, r"term samples=\d+")
    short_notices.wait_log(job, r"start run=1 samples=\d+")
    assert short_notices.at(job, "notice") < short_notices.at(job, "term")
    live.wait_job(short_notices.api, job, lambda j: j.state == "RUNNING" and j.gpu_config() == {"v100-2": 1})


def test_a_job_that_finishes_during_its_notice_is_never_requeued(notices: Notices, submit, live) -> None:  # noqa: ANN001
    job = submit(notices.body("finish"))
    notices.track(job)
    notices.apply({job: {"v100-1": 1}})
    notices.listening(job)
    result = notices.enactor.apply({job: {"v100-2": 1}})
    assert result.notices[job].given and result.notices[job].ended
    assert result.ended == [job] and result.preempted == [] and result.started == []
    done = live.wait_job(notices.api, job, lambda j: j.state == "COMPLETED")
    assert done.restart_count == 0
    # Slurm 22.05 would requeue even a COMPLETED job on a plain `requeuehold`; the backend's never does
    notices.api.requeue_hold(job)
    live.stays(notices.api, job, lambda j: j.state == "COMPLETED" and j.restart_count == 0, seconds=2.0)


def test_a_job_that_does_not_listen_gets_no_signal_and_is_requeued_alive(notices: Notices, submit, live) -> None:  # noqa: ANN001
    plain = submit("sleep 300")  # knows nothing of the protocol
    child = submit(notices.body("answer", exec_python=False))  # python under a shell the signal would kill
    for job in (plain, child):
        notices.track(job)
    notices.apply({plain: {"v100-1": 1}, child: {"v100-1": 1}})
    notices.wait_log(child, r"start run=0 samples=0")
    notices.marks.read(notices.tracked[child])
    assert not notices.marks.listening(notices.api.job(child))  # type: ignore[arg-type]
    result = notices.apply({plain: {"v100-2": 1}, child: {"v100-2": 1}})
    assert not result.notices[plain].given and not result.notices[child].given
    assert sorted(result.preempted) == sorted([plain, child])
    assert [a.kind for a in notices.enactor.journal.actions() if a.kind == "notice"] == []
    for job in (plain, child):
        live.wait_job(notices.api, job, lambda j: j.state == "RUNNING" and j.restart_count == 1)
    notices.wait_log(child, r"start run=1 samples=\d+")

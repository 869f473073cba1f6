"""Reading just the jobs an enactment waits on (:func:`hops_slurm.slurm.batch.jobs_of`): one ``squeue --json
--jobs=..`` where the release filters its JSON (24.11, 26.05), the whole listing where it does not (22.05) or
where the backend has no such read; and the snapshot that keeps the other jobs as they were read."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from types import SimpleNamespace

from hops_slurm.slurm import read_text
from hops_slurm.slurm.api import SlurmCommandError, SlurmJob
from hops_slurm.slurm.batch import jobs_of
from hops_slurm.slurm.cli import CliSlurm
from hops_slurm.slurm.dialect import DIALECTS
from hops_slurm.slurm.enact import Enactor
from hops_slurm.slurm.snapshot import Snapshot
from tests_paths import DATA

LISTING_2411 = (DATA / "slurm-output" / "24.11" / "scontrol-show-job.json").read_text()
LISTING_2205 = (DATA / "slurm-output" / "22.05" / "squeue.json").read_text()


class Recording(CliSlurm):
    """The CLI backend with Slurm's answers given: the 24.11 job listing (squeue --json answers in the same
    JSON as scontrol show job --json) or an error for one id slurmctld forgot."""

    def __init__(self, release: str, refuse: bool = False) -> None:
        super().__init__(env={}, dialect=DIALECTS[release])
        self.ran: list[list[str]] = []
        self.refuse = refuse

    def _run(self, argv: list[str], stdin: str | None = None, env: Mapping[str, str] | None = None) -> str:
        self.ran.append(argv)
        if self.refuse and any(a.startswith("--jobs=") for a in argv):
            raise SlurmCommandError(argv, 1, "slurm_load_jobs error: Invalid job id specified")
        return LISTING_2411 if self.dialect.release != "22.05" else LISTING_2205


def test_24_11_reads_just_the_named_jobs_in_one_squeue() -> None:
    api = Recording("24.11")
    got, whole = jobs_of(api, ["7", "3", "10"])
    assert api.ran == [["squeue", "--json", "--jobs=3,7,10"]]
    assert not whole
    assert sorted(j.job_id for j in got) == ["10", "3", "7"]  # the answer's other jobs are not taken as fresh
    assert all(j.gpu_alloc for j in got if j.active)  # with their GPU indices (--json implies detail)


def test_22_05_reads_the_whole_listing_its_squeue_cannot_filter() -> None:
    api = Recording("22.05")
    assert api.jobs_of(["7"]) is None
    got, whole = jobs_of(api, ["7"])
    # the listing's text first (here not squeue's text: the JSON answers, as for a job started since)
    assert api.ran == [list(read_text.ARGV), ["squeue", "--json"]]
    assert whole and len(got) > 1


def test_an_id_that_is_not_a_job_number_or_a_forgotten_job_falls_back_to_the_listing() -> None:
    api = Recording("26.05" if "26.05" in DIALECTS else "24.11")
    assert api.jobs_of(["7", "12_3"]) is None
    assert api.ran == []
    refusing = Recording("24.11", refuse=True)
    got, whole = jobs_of(refusing, ["999"])
    assert whole and refusing.ran == [["squeue", "--json", "--jobs=999"], ["scontrol", "show", "job", "--json"]]


def _job(job_id: str, state: str) -> SlurmJob:
    return SlurmJob(job_id=job_id, name="j", user="u", state=state)


def test_a_snapshot_of_some_jobs_keeps_the_others_as_they_were_read() -> None:
    snap = Snapshot(jobs=(_job("1", "RUNNING"), _job("2", "PENDING")))
    some = snap.with_jobs([_job("2", "RUNNING"), _job("5", "PENDING")], whole=False)
    assert {j.job_id: j.state for j in some.jobs} == {"1": "RUNNING", "2": "RUNNING", "5": "PENDING"}
    whole = snap.with_jobs([_job("2", "RUNNING")])
    assert [j.job_id for j in whole.jobs] == ["2"]


class Filtering:
    """A backend that can read some jobs: job 7 starts on n1 after 0.2 s; job 1 runs elsewhere throughout."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.calls: Counter[str] = Counter()

    def _seven(self) -> SlurmJob:
        if time.monotonic() - self.t0 < 0.2:
            return _job("7", "PENDING")
        return _job("7", "RUNNING").model_copy(update={"nodes": ["n1"], "gpu_alloc": {"n1": (0, 1)}})

    def nodes(self) -> list[SimpleNamespace]:
        self.calls["nodes"] += 1
        used = (0, 1) if time.monotonic() - self.t0 >= 0.2 else ()
        return [SimpleNamespace(name="n1", gpus_total=8, gpus_used=used)]

    def jobs(self) -> list[SlurmJob]:
        self.calls["jobs"] += 1
        return [_job("1", "RUNNING"), self._seven()]

    def jobs_of(self, job_ids: list[str]) -> list[SlurmJob]:
        self.calls["jobs_of"] += 1
        return [self._seven()] if "7" in job_ids else []


def test_settling_a_start_reads_the_started_jobs_not_the_listing() -> None:
    api = Filtering()
    me = SimpleNamespace(api=api, settle_timeout=5.0, poll=0.05, planned_config=lambda j: {"n1": 2})
    before = Snapshot(jobs=(_job("1", "RUNNING"), _job("7", "PENDING")))
    after = Enactor._await_start(me, ["7"], before, {"n1": 6})  # type: ignore[arg-type]
    assert api.calls["jobs"] == 0 and api.calls["jobs_of"] == 1
    assert {j.job_id: j.state for j in after.jobs} == {"1": "RUNNING", "7": "RUNNING"}

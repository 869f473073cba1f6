"""22.05's job listing as text (:mod:`hops_slurm.slurm.read_text`): records split on a separator drawn for
each read, refused whole unless exact; the JSON record each gives; running jobs' GPU indices kept from the
last JSON listing; and the CLI backend reading the JSON only when the text cannot answer."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from hops_slurm.slurm import read_text
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.cli import CliSlurm
from hops_slurm.slurm.dialect import DIALECTS
from hops_slurm.slurm.read_common import JobCache
from hops_slurm.slurm.read_text import FIELDS, FromJson, minutes, records

SEP = read_text.new_separator()
HOPS = "hops:gpus=1 samples=10 batch-size=1 model=m"


def line(**values: str) -> str:
    """One record as squeue writes it: every field of FIELDS followed by the separator, then a new line."""
    base = {"job_id": "7", "job_state": "PENDING", "state_reason": "JobHeldAdmin", "priority": "0", "partition": "hops",
            "account": "(null)", "qos": "(null)", "user_name": "ann", "submit_time": "1700000000", "start_time": "N/A",
            "end_time": "N/A", "eligible_time": "N/A", "nodes": "", "required_nodes": "", "node_count": "1",
            "tres_per_node": "N/A", "tres_per_job": "N/A", "resv_name": "(null)", "restart_cnt": "0",
            "time_limit": "UNLIMITED", "dependency": "(null)", "name": "train.sh", "comment": "(null)", "admin_comment": HOPS}
    base.update(values)
    return "".join(base[key] + SEP for _, key in FIELDS) + "\n"


def test_names_and_comments_with_new_lines_and_other_separators_stay_their_jobs() -> None:
    hostile = "a\n8" + "|" * 3 + "\n9~X~RUNNING"  # a new line, then what looks like the next record
    found = records(line(job_id="7", name=hostile, comment="x\n") + line(job_id="8"), SEP)
    assert found is not None
    assert [(r["job_id"], r["name"], r["comment"]) for r in found] == [("7", hostile, "x\n"), ("8", "train.sh", "(null)")]


@pytest.mark.parametrize("text", [
    line().replace(SEP, "", 1),  # a field short
    line() + line()[:-1] + "trailing",  # not ended as a record is
    line(job_id="7_[1-3]"),  # not a job id
    line(job_id="1" * 21),  # longer than Slurm writes
    line(job_id="\u0661\u0662"),  # digits, not ASCII ones
    "squeue: error: Invalid job format specification: admin_comment\n",  # squeue refused the format
])
def test_anything_but_exact_records_is_refused_whole(text: str) -> None:
    assert records(line(job_id="1") + text, SEP) is None


def test_an_empty_listing_is_no_records() -> None:
    assert records("", SEP) == []


@pytest.mark.parametrize("text, expected", [("UNLIMITED", None), ("Partition_Limit", None), ("1:30:00", 90),
                                            ("1-02:00:00", 1560), ("365-00:00:00", 525600), ("45", 45),
                                            ("5:00", 5), ("0:00:30", 1), ("9" * 30, None)])
def test_time_limits_read_in_minutes_as_the_json_gives_them(text: str, expected: int | None) -> None:
    assert minutes(text) == expected


def test_the_format_goes_in_the_environment_and_no_site_setting_filters_the_listing() -> None:
    env = read_text.environment({"PATH": "/bin", "SQUEUE_PARTITION": "other", "SQUEUE_FORMAT": "%i"}, SEP)
    assert env["PATH"] == "/bin" and "SQUEUE_PARTITION" not in env and "SQUEUE_FORMAT" not in env
    assert env["SQUEUE_FORMAT2"].split(",")[0] == f"JobID:0{SEP}" and env["SLURM_TIME_FORMAT"] == "%s"
    assert SEP not in " ".join(read_text.ARGV)
    assert read_text.new_separator() != read_text.new_separator()


def running(job_id: str, start: float, alloc: Mapping[str, tuple[int, ...]]) -> SlurmJob:
    return SlurmJob(job_id=job_id, state="RUNNING", start_time=start, nodes=tuple(alloc), gpu_alloc=dict(alloc),
                    tres_per_node="gres:gpu:1")


def test_a_running_job_reads_its_gpus_from_the_last_json_listing_while_it_runs_there() -> None:
    known = FromJson()
    known.remember([running("7", 100.0, {"a100-1": (3,)}), running("8", 100.0, {"a100-1": ()})])  # 8: not listed yet
    text = line(job_id="7", job_state="RUNNING", start_time="100", nodes="a100-1")
    jobs = read_text.jobs(records(text, SEP) or [], known, JobCache())
    assert jobs is not None and jobs[0].gpu_alloc == {"a100-1": (3,)}
    for other in (line(job_id="7", job_state="RUNNING", start_time="160", nodes="a100-1"),  # started again
                  line(job_id="8", job_state="RUNNING", start_time="100", nodes="a100-1"),  # its GPUs not known
                  line(job_id="9", job_state="RUNNING", start_time="100", nodes="a100-1")):  # started since
        assert read_text.jobs(records(other, SEP) or [], known, JobCache()) is None


class Listings(CliSlurm):
    """The CLI backend of 22.05 with squeue's answers given (nothing is run); ``text``: the text listing of
    the jobs (None: squeue's text is refused), ``json_jobs``: the JSON listing's records."""

    def __init__(self, text: str | None, json_jobs: list[dict[str, object]]) -> None:
        super().__init__(env={}, dialect=DIALECTS["22.05"])
        self.text, self.json_jobs, self.ran = text, json_jobs, []  # type: ignore[var-annotated]

    def _run(self, argv: list[str], stdin: str | None = None, env: Mapping[str, str] | None = None) -> str:
        self.ran.append("json" if "--json" in argv else "text" if argv[0] == "squeue" else "release")
        if argv[0] != "squeue":
            return ""
        if "--json" in argv:
            return json.dumps({"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "jobs": self.json_jobs})
        assert env is not None
        sep = env["SQUEUE_FORMAT2"].split(",")[0][len("JobID:0"):]
        return "squeue: error: Invalid job format specification\n" if self.text is None else self.text.replace(SEP, sep)


def test_the_json_listing_answers_only_when_the_text_cannot() -> None:
    pending = {"job_id": 7, "job_state": "PENDING", "state_reason": "JobHeldAdmin", "priority": 0, "partition": "hops",
               "user_name": "ann", "submit_time": 1700000000, "node_count": 1, "name": "train.sh", "admin_comment": HOPS}
    started = {**pending, "job_id": 8, "job_state": "RUNNING", "state_reason": "None", "priority": 1,
               "start_time": 100, "nodes": "a100-1", "tres_per_node": "gres:gpu:1", "gres_detail": ["gpu:a100:1(IDX:5)"],
               "name": "train.sh", "admin_comment": HOPS}
    run8 = line(job_id="8", job_state="RUNNING", state_reason="None", priority="1", start_time="100", nodes="a100-1",
                tres_per_node="gres:gpu:1")
    api = Listings(line(job_id="7"), [pending])
    assert [j.job_id for j in api.jobs()] == ["7"] and api.ran == ["text"]  # nothing runs: the text answers
    api.text, api.json_jobs = line(job_id="7") + run8, [pending, started]
    first = api.jobs()  # job 8 started since: its GPUs only the JSON gives
    assert api.ran == ["text", "text", "json"] and first[1].gpu_alloc == {"a100-1": (5,)}
    again = api.jobs()
    assert api.ran == ["text", "text", "json", "text"] and again == first
    api.text = None  # squeue's text is not what was asked for: the JSON answers
    assert api.jobs() == first and api.ran[-2:] == ["text", "json"]


def test_after_releasing_jobs_the_next_listing_is_the_json_at_once() -> None:
    api = Listings(line(job_id="7"), [])
    api.jobs()
    api.release_all(["7", "8"])  # they may start: the text could not give their GPUs
    api.jobs()
    api.jobs()
    assert [r for r in api.ran if r != "release"] == ["text", "json", "text"]


def test_a_reason_squeue_writes_as_a_description_is_read_from_the_json() -> None:
    """22.05's text gives slurmctld's description of a reason where it wrote one, which does not say the
    reason (a requeue-held job keeps ``job requeued in held state`` after the admin hold)."""
    described = line(job_id="7", state_reason="job requeued in held state")
    assert read_text.jobs(records(described, SEP) or [], FromJson(), JobCache()) is None
    coded = read_text.jobs(records(line(job_id="7"), SEP) or [], FromJson(), JobCache())
    assert coded is not None and coded[0].reason == "JobHeldAdmin"


def test_a_described_reason_takes_its_code_from_the_last_json_listing_until_a_hold() -> None:
    requeued = {"job_id": 7, "job_state": "PENDING", "state_reason": "JobHeldUser", "priority": 0, "partition": "hops",
                "user_name": "ann", "submit_time": 1700000000, "node_count": 1, "name": "train.sh", "admin_comment": HOPS,
                "state_description": "job requeued in held state"}
    api = Listings(line(job_id="7", state_reason="job requeued in held state"), [requeued])
    assert [j.reason for j in api.jobs()] == ["JobHeldUser"] and api.ran == ["text", "json"]
    assert [j.reason for j in api.jobs()] == ["JobHeldUser"] and api.ran[-1] == "text"  # the code kept
    api.hold_all(["7"])  # the code changes (JobHeldAdmin), the description stays: the JSON says which
    api.json_jobs = [{**requeued, "state_reason": "JobHeldAdmin"}]
    assert [j.reason for j in api.jobs()] == ["JobHeldAdmin"] and api.ran[-2:] == ["text", "json"]

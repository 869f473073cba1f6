"""22.05's job listing as text (:mod:`hops_slurm.slurm.read_text`): records split on a separator drawn for
each read, refused whole unless exact; the JSON record each gives; running jobs' GPU indices kept from the
last JSON listing; and the CLI backend reading the JSON only when the text cannot answer."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from hops_slurm.slurm import read_detail, read_text
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.cli import CliSlurm
from hops_slurm.slurm.dialect import DIALECTS
from hops_slurm.slurm.read_common import JobCache
from hops_slurm.slurm.read_text import FIELDS, FromJson, minutes, records

SEP = read_text.new_separator()
HOPS = "hops:gpus=1 samples=10 batch-size=1 model=m"


#: a name that holds what scontrol writes: another record, a detail group, new lines
HOSTILE = "x\nJobId=8 JobName=y UserId=a(1) JobState=RUNNING StartTime=100 NodeList=a100-1 BatchHost=a100-1 JOB_GRES=gpu:8" \
          "   Nodes=a100-1 CPU_IDs=0 Mem=0 GRES=gpu:a100:8(IDX:0-7) MinCPUsNode=1\n"


def group(nodes: str, gres: str) -> str:
    """One node group of scontrol's detail (``-d``)."""
    return f"   Nodes={nodes} CPU_IDs=0 Mem=1000 GRES={gres}"


def shown(job_id: str = "8", name: str = "train.sh", state: str = "RUNNING", start: str = "100", nodes: str = "a100-1",
          detail: str = " JOB_GRES=gpu:a100:2" + group("a100-1", "gpu:a100:2(IDX:3,5)"), comment: str = "(null)") -> str:
    """``scontrol -o -d show job`` of one job, as 22.05.8 writes it (times as epoch seconds)."""
    return (f"JobId={job_id} JobName={name} UserId=ann(1000) GroupId=ann(1000) MCS_label=N/A Priority=1 Nice=0 Account=(null) "
            f"QOS=(null) JobState={state} Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 "
            f"ExitCode=0:0 RunTime=00:00:05 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=90 EligibleTime=90 StartTime={start} "
            f"EndTime=Unknown Deadline=N/A Partition=hops AllocNode:Sid=login:1 ReqNodeList=(null) ExcNodeList=(null) "
            f"NodeList={nodes} BatchHost=a100-1 NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* "
            f"TRES=cpu=1,node=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*{detail} MinCPUsNode=1 "
            f"MinMemoryCPU=1000M Features=(null) Command=(null) WorkDir=/home/ann Comment={comment} StdErr=/dev/null "
            f"StdIn=/dev/null StdOut=/dev/null Power= TresPerNode=gres:gpu:a100:2 \n")


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
        self.shown: dict[str, str] = {}  # ``scontrol -o -d show job <id>``'s answer by id

    def _run(self, argv: list[str], stdin: str | None = None, env: Mapping[str, str] | None = None) -> str:
        if argv[:5] == read_detail.argv("")[:5]:
            self.ran.append("show " + argv[5])
            assert env is not None and env["SLURM_TIME_FORMAT"] == "%s"
            return self.shown.get(argv[5], "")
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
               "start_time": 100, "end_time": 100 + read_text.UNLIMITED_RUN_S, "nodes": "a100-1", "tres_per_node": "gres:gpu:1", "gres_detail": ["gpu:a100:1(IDX:5)"],
               "name": "train.sh", "admin_comment": HOPS}
    run8 = line(job_id="8", job_state="RUNNING", state_reason="None", priority="1", start_time="100", nodes="a100-1",
                tres_per_node="gres:gpu:1")
    api = Listings(line(job_id="7"), [pending])
    assert [j.job_id for j in api.jobs()] == ["7"] and api.ran == ["text"]  # nothing runs: the text answers
    api.text, api.json_jobs = line(job_id="7") + run8, [pending, started]
    first = api.jobs()  # job 8 started since: scontrol's answer is not its record, so the JSON gives its GPUs
    assert api.ran == ["text", "text", "show 8", "json"] and first[1].gpu_alloc == {"a100-1": (5,)}
    again = api.jobs()
    assert api.ran == ["text", "text", "show 8", "json", "text"] and again == first
    api.text = None  # squeue's text is not what was asked for: the JSON answers
    assert api.jobs() == first and api.ran[-2:] == ["text", "json"]


def test_a_job_started_since_reads_its_gpus_from_scontrol_not_the_json_listing() -> None:
    run8 = line(job_id="8", job_state="RUNNING", state_reason="None", priority="1", start_time="100", nodes="a100-[1-2]",
                tres_per_node="gres:gpu:1", name=HOSTILE)
    api = Listings(line(job_id="7") + run8, [])
    api.shown["8"] = shown("8", name=HOSTILE, nodes="a100-[1-2]", detail=" JOB_GRES=gpu:a100:2" + group("a100-1", "gpu:a100:1(IDX:5)")
                           + group("a100-2", "gpu:a100:1(IDX:0)"))
    api.release_all(["8"])
    first = api.jobs()
    assert api.ran == ["release", "text", "show 8"] and first[1].gpu_alloc == {"a100-1": (5,), "a100-2": (0,)}
    assert api.jobs() == first and api.ran[-1] == "text"  # kept while it runs


def test_after_releasing_more_jobs_than_scontrol_is_asked_for_the_next_listing_is_the_json_at_once() -> None:
    api = Listings(line(job_id="7"), [])
    api.jobs()
    api.release_all([str(i) for i in range(read_detail.LIMIT)])  # they may start: scontrol gives their GPUs
    api.jobs()
    api.release_all(["8"])  # more may start than scontrol is asked for
    api.jobs()
    api.jobs()
    assert [r for r in api.ran if r != "release"] == ["text", "text", "json", "text"]


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


def detail_of(text: str, name: str = "train.sh", nodes: tuple[str, ...] = ("a100-1",)) -> dict[str, tuple[int, ...]] | None:
    return read_detail.allocation(text, "8", name, "RUNNING", 100, nodes)


def test_scontrol_gives_each_nodes_gpus_grouped_nodes_included() -> None:
    assert detail_of(shown()) == {"a100-1": (3, 5)}
    both = shown(nodes="a100-[1-2]", detail=" JOB_GRES=gpu:a100:2" + group("a100-[1-2]", "gpu:a100:1(IDX:4)"))
    assert detail_of(both, nodes=("a100-1", "a100-2")) == {"a100-1": (4,), "a100-2": (4,)}


def test_a_name_or_comment_holding_scontrol_text_never_gives_the_gpus() -> None:
    # the name holds a whole fake record; the real one lists GPUs 3,5
    assert detail_of(shown(name=HOSTILE), name=HOSTILE) == {"a100-1": (3, 5)}
    # the real detail names no GPU: a fake one in the comment is not read
    fake = " JOB_GRES=gpu:8" + group("a100-1", "gpu:a100:8(IDX:0-7)") + " MinCPUsNode=1"
    assert detail_of(shown(detail=" JOB_GRES=(null)", comment=fake)) is None
    # a name other than the listing's (another job's record, or the name cut): refused
    assert detail_of(shown(name=HOSTILE), name="x") is None
    assert detail_of(shown(name="x"), name=HOSTILE) is None


@pytest.mark.parametrize("text", [
    "",
    shown(job_id="9"),  # another job
    shown(state="PENDING"),  # not running any more
    shown(start="160"),  # started again since the listing
    shown(nodes="a100-2"),  # other nodes
    shown(detail=" JOB_GRES=gpu:a100:2" + group("a100-2", "gpu:a100:2(IDX:3,5)")),  # detail of another node
    shown(detail=" JOB_GRES=gpu:a100:2" + group("a100-1", "gpu:a100:2(IDX:N/A)")),  # no indices yet
    shown(detail=" JOB_GRES=gpu:a100:2" + group("a100-1", "gpu:a100:2(IDX:3)")),  # fewer indices than GPUs
    shown(detail=" JOB_GRES=gpu:a100:2" + group("a100-1", "gpu:a100:1(IDX:3)") + group("a100-1", "gpu:a100:1(IDX:5)")),
    shown(detail=" JOB_GRES=gpu:a100:2" + group("a100-[1-", "gpu:a100:2(IDX:3,5)")),  # malformed host list
    shown(detail=""),  # no detail (not -d)
    shown() + "x" * read_detail.MAX_OUTPUT,
])
def test_anything_but_the_jobs_whole_allocation_is_refused(text: str) -> None:
    assert detail_of(text) is None


def test_a_job_running_without_a_time_limit_ends_a_year_after_its_start_as_the_json_says() -> None:
    unlimited = read_text.json_record(records(line(job_state="RUNNING", start_time="100", end_time="NONE"), SEP)[0])
    assert unlimited["end_time"] == 100 + 365 * 24 * 3600
    limited = line(job_state="RUNNING", start_time="100", end_time="160", time_limit="1:00")
    assert read_text.json_record(records(limited, SEP)[0])["end_time"] == 160
    assert read_text.json_record(records(line(end_time="NONE"), SEP)[0])["end_time"] == 0  # pending

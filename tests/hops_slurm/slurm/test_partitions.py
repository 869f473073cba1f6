"""hops_slurm.slurm.partitions and the partition rules of hops_slurm.slurm.assoc (issue 23).

Recorded on 22.05, 24.11 and 26.05 (tests/data/slurm-output/<release>/): partition ``hops`` with
``MaxNodes=1 MaxTime=02:00:00 QOS=hopspart TRESBillingWeights=CPU=1.0,GRES/gpu=4.0``, the QOS
``hopspart`` (``MaxTRESPerNode=gres/gpu=4 MaxTRES=gres/gpu=6 MaxTRESPerUser=gres/gpu=12
GrpTRES=gres/gpu=14``), and five jobs whose reasons Slurm printed in ``squeue-partition-limits.txt``:
1 asks 3 h (PartitionTimeLimit), 2 two nodes (PartitionNodeLimit), 3 five GPUs on a node
(QOSMaxGRESPerNode), 4 eight GPUs (QOSMaxGRESPerJob); 5 (2 GPUs) runs.
"""

from __future__ import annotations

import json

import pytest

from hops_slurm.slurm.api import SlurmJob
from hops_slurm.errors import GovernanceError
from hops_slurm.slurm.assoc import QOS_ARGV, parse_qos
from hops_slurm.slurm.gov_limits import Governance, limits_for
from hops_slurm.slurm.gov_source import GovernanceSource
from hops_slurm.slurm.partitions import PARTITION_ARGV, parse_partitions, slurm_duration
from hops_slurm.slurm.read_v0038 import jobs as read_v0038_jobs
from planner.governance import governed_plan
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.views import ClusterView, JobView, NodeView
from tests.tests_paths import DATA

RELEASES = ["22.05", "24.11", "26.05"]


def recorded(release: str) -> Governance:
    rec = DATA / "slurm-output" / release
    return Governance(qos=parse_qos((rec / "sacctmgr-show-qos-partition.txt").read_text()),
                      partitions=parse_partitions((rec / "scontrol-show-partition.txt").read_text()))


def slurm_said(release: str) -> dict[str, str]:
    lines = (DATA / "slurm-output" / release / "squeue-partition-limits.txt").read_text().splitlines()[1:]
    return {f[0]: f[2] for f in (ln.split("|") for ln in lines)}


def the_five_jobs() -> list[SlurmJob]:
    """The recorded jobs as the engine reads them (time limits in seconds; 2 h is the partition's default)."""
    def j(i: int, state: str = "PENDING", time_limit: float = 7200.0, gpus=None) -> SlurmJob:  # noqa: ANN001
        return SlurmJob(job_id=str(i), user="root", account="root", qos="normal", partition="hops", state=state,
                        time_limit=time_limit, gpu_alloc=gpus or {})
    return [j(1, time_limit=3 * 3600.0), j(2), j(3), j(4), j(5, "RUNNING", gpus={"gov-1": (0, 1)})]


@pytest.mark.parametrize("release", RELEASES)
def test_every_release_prints_the_same_partition_limits(release: str) -> None:
    parts = recorded(release).partitions
    hops, prof = parts["hops"], parts["profiler"]
    assert (hops.max_nodes, hops.max_time, hops.max_time_text, hops.qos, hops.state) == (1, 7200.0, "02:00:00", "hopspart", "UP")
    assert (prof.max_nodes, prof.max_time, prof.qos) == (None, None, "")
    q = recorded(release).qos["hopspart"]
    assert (q.max_gpus_per_node, q.max_gpus_per_job, q.max_gpus_per_user, q.grp_gpus) == (4, 6, 12, 14)


@pytest.mark.parametrize("release", ["24.11", "26.05"])
def test_the_json_of_newer_releases_says_the_same(release: str) -> None:
    """``scontrol show partition --json`` (24.11+; 22.05 has none) agrees with the one-line form read."""
    data = json.loads((DATA / "slurm-output" / release / "scontrol-show-partition.json").read_text())
    got = {p["name"]: p for p in data["partitions"]}["hops"]
    assert got["maximums"]["nodes"]["number"] == 1 and got["maximums"]["time"]["number"] * 60 == 7200
    assert got["qos"]["assigned"] == "hopspart"


@pytest.mark.parametrize("release", RELEASES)
def test_each_job_is_held_back_by_the_limit_slurm_named(release: str) -> None:
    said = slurm_said(release)
    limits = limits_for(recorded(release), the_five_jobs())
    assert limits.blocked["1"] == "PartitionTimeLimit: partition=hops MaxTime=02:00:00"
    assert said["1"] == "PartitionTimeLimit"
    assert limits.shapes["2"].refusal({"gov-1": 1, "gov-2": 1}) == "PartitionNodeLimit: partition=hops MaxNodes=1"
    assert said["2"] == "PartitionNodeLimit"
    assert limits.shapes["3"].refusal({"gov-1": 5}) == "QOSMaxGRESPerNode: qos=hopspart gres/gpu=4 per node"
    assert said["3"] == "QOSMaxGRESPerNode"
    assert limits.per_job["4"] == (6, "QOSMaxGRESPerJob: qos=hopspart gres/gpu=6 per job") and said["4"] == "QOSMaxGRESPerJob"
    assert said["5"] == "None" and "5" not in limits.blocked  # running: Slurm's already (a move keeps its shape)
    grp = {c.label: c for c in limits.caps}["QOSGrpGRES: qos=hopspart gres/gpu=14"]
    assert grp.jobs == {"1", "2", "3", "4", "5"} and dict(grp.held) == {"5": 2}


def test_the_plan_keeps_the_recorded_partition() -> None:
    """Through the planner: 8-GPU nodes, 2 GPUs running; a job that may take 2, 4 or 8 GPUs gets at most 4
    on one node (MaxTRESPerNode=4, MaxNodes=1); the 3 h job and an 8-only job are limited, named."""
    gov = recorded("22.05")
    sj = the_five_jobs()[:1] + [SlurmJob(job_id="6", user="root", account="root", qos="normal", partition="hops",
                                         state="PENDING", time_limit=3600.0),
                                SlurmJob(job_id="7", user="root", account="root", qos="normal", partition="hops",
                                         state="PENDING", time_limit=3600.0)]
    limits = limits_for(gov, sj)
    views = tuple(JobView(j, r, submit_time=0.0, wait=10.0, age=100.0, sensitivity=1.0,
                          throughput=lambda c: float(sum(c.values())) ** 0.9) for j, r in (("1", (1,)), ("6", (2, 4, 8)), ("7", (8,))))
    cluster = ClusterView((NodeView("gov-1", "a100", "a100", 8, 6), NodeView("gov-2", "a100", "a100", 8, 8)))
    plan = governed_plan(HopsPolicy(PlannerParams(time_limit=5.0)), cluster, views, 0.0, fragment=True, limits=limits)
    placed = plan.placed()
    assert "1" not in placed and "7" not in placed
    assert len(placed["6"]) == 1 and sum(placed["6"].values()) <= 4
    assert plan.diagnostics["limited"] == {"1": "PartitionTimeLimit: partition=hops MaxTime=02:00:00",
                                           "7": "QOSMaxGRESPerJob: qos=hopspart gres/gpu=6 per job"}


def test_a_down_or_inactive_partition_starts_nothing() -> None:
    text = ("PartitionName=a MaxNodes=UNLIMITED MaxTime=UNLIMITED QoS=N/A State=DOWN\n"
            "PartitionName=b MaxNodes=UNLIMITED MaxTime=1-00:00:00 QoS=N/A State=INACTIVE\n")
    gov = Governance(partitions=parse_partitions(text))
    jobs = [SlurmJob(job_id="1", partition="a", state="PENDING"), SlurmJob(job_id="2", partition="b", state="PENDING"),
            SlurmJob(job_id="3", partition="c", state="PENDING")]
    assert dict(limits_for(gov, jobs).blocked) == {"1": "PartitionDown: partition=a", "2": "PartitionInactive: partition=b"}


def test_job_time_limits_are_read_in_seconds() -> None:
    """22.05's ``squeue --json`` gives minutes (525600 = a year here); null is none."""
    data = json.loads((DATA / "slurm-output" / "22.05" / "squeue.json").read_text())
    limits = {j.time_limit for j in read_v0038_jobs(data)}
    assert 525600 * 60.0 in limits and 0.0 in limits


@pytest.mark.parametrize(("text", "seconds"), [("UNLIMITED", None), ("30", 1800.0), ("05:30", 330.0),
                                                ("02:00:00", 7200.0), ("1-00:00:00", 86400.0), ("2-12", 216000.0),
                                                ("1-01:02", 90120.0), ("999999-00:00:00", None)])
def test_slurm_durations(text: str, seconds: float | None) -> None:
    assert slurm_duration(text, "MaxTime") == seconds


@pytest.mark.parametrize(("text", "message"), [
    ("PartitionName=a MaxNodes=many\n", "partition a: MaxNodes 'many' is not a whole number"),
    ("PartitionName=a MaxTime=soon\n", "partition a: MaxTime 'soon' is not a Slurm time limit"),
    ("PartitionName=a QoS=x,y\n", "partition a: QoS 'x,y' is not a QOS name"),
    ("PartitionName=a MinNodes=\u00b2\n", "partition a: MinNodes '\u00b2' is not a whole number"),
    ("PartitionName=a MaxTime=\u0661:\u0660\u0660\n", "partition a: MaxTime '\u0661:\u0660\u0660' is not a Slurm time limit"),
    ("PartitionName=a MaxTime=\uff11\uff10\n", "partition a: MaxTime '\uff11\uff10' is not a Slurm time limit"),
])
def test_a_malformed_partition_is_one_line_naming_the_problem(text: str, message: str) -> None:
    problems: list[str] = []
    parts = parse_partitions("PartitionName=ok MaxNodes=2\n" + text, problems)
    assert problems == [message] and parts["a"].unreadable == message and parts["ok"].max_nodes == 2


def test_a_line_with_no_partition_name_is_named_and_skipped() -> None:
    problems: list[str] = []
    assert list(parse_partitions("MaxNodes=1\nPartitionName=a MaxNodes=2\n", problems)) == ["a"]
    assert problems == ["scontrol show partition line 1: PartitionName '' is not a partition name"]
    with pytest.raises(GovernanceError, match="no partition in the output"):  # nothing read: a failed read
        parse_partitions("MaxNodes=1\n", [])
    assert parse_partitions("No partitions in the system\n", []) == {}


def test_partitions_are_kept_without_accounting() -> None:
    """slurm.conf has no accounting storage: the partitions' limits hold, sacctmgr is never asked (Slurm
    enforces no association limits there), and nothing is held back as unread."""
    now = [0.0]
    calls: list[str] = []
    part = (DATA / "slurm-output" / "22.05" / "scontrol-show-partition.txt").read_text()

    def run(argv: list[str]) -> str:
        calls.append(argv[0])
        if argv == PARTITION_ARGV:
            return part
        if argv[:3] == ["scontrol", "show", "config"]:
            return "AccountingStorageType   = accounting_storage/none\n"
        raise GovernanceError(f"{argv[0]}: Connection refused")

    src = GovernanceSource(run, ttl=60.0, clock=lambda: now[0])
    gov = src.current()
    assert gov.partitions["hops"].max_nodes == 1 and not gov.associations and gov.unread == ""
    assert calls == ["scontrol", "scontrol"]
    now[0] = 61.0
    src.current()
    assert calls == ["scontrol"] * 4
    assert QOS_ARGV[-1].endswith("MaxTRESPerNode")

"""hops_slurm.slurm.assoc: associations and QOS as sacctmgr prints them, and the caps they set (issue 23).

The recorded output (tests/data/slurm-output/22.05/sacctmgr-show-*.txt) is what slurmdbd 22.05 printed
for accounts ``physics`` (GrpTRES=gres/gpu=8, MaxJobs=5) and ``bio`` (GrpTRES=gres/gpu=12, GrpJobs=4,
user root MaxTRES=gres/gpu=8) and QOS ``gpuuser`` (MaxTRESPU=gres/gpu=4, MaxJobsPU=3).
"""

from __future__ import annotations

import pytest

from hops_slurm.slurm.api import SlurmJob
from hops_slurm.errors import GovernanceError
from hops_slurm.slurm.assoc import ASSOC_ARGV, QOS_ARGV, SSHARE_ARGV, gpus_of_tres, parse_assoc, parse_qos, parse_sshare
from hops_slurm.slurm.gov_limits import Governance, limits_for
from hops_slurm.slurm.gov_source import CONFIG_ARGV, GovernanceSource, jobs_fair_share
from tests.tests_paths import DATA

REC = DATA / "slurm-output" / "22.05"


def recorded() -> Governance:
    return Governance(tuple(parse_assoc((REC / "sacctmgr-show-assoc.txt").read_text())),
                      parse_qos((REC / "sacctmgr-show-qos.txt").read_text()))


def sjob(i: int, account: str, *, user: str = "root", qos: str = "normal", gpus: dict[str, tuple[int, ...]] | None = None,
         state: str = "PENDING") -> SlurmJob:
    return SlurmJob(job_id=str(i), user=user, account=account, qos=qos, state=state, gpu_alloc=gpus or {})


def test_recorded_associations_and_qos_are_read() -> None:
    gov = recorded()
    physics = [a for a in gov.associations if a.account == "physics" and not a.user][0]
    assert (physics.grp_gpus, physics.max_jobs, physics.parent) == (8, 5, "root")
    bio_root = gov.user_row("bio", "root", "")
    assert bio_root is not None and bio_root.max_gpus_per_job == 8
    assert [a.account for a in gov.account_chain("bio")] == ["bio"]  # root sets no limit: not in the chain
    q = gov.qos["gpuuser"]
    assert (q.max_gpus_per_user, q.max_jobs_per_user) == (4, 3)
    assert gov.qos["normal"].max_gpus_per_user is None


def test_caps_of_the_recorded_site_over_a_listing() -> None:
    gov = recorded()
    jobs = [sjob(1, "physics", gpus={"n0": (0, 1, 2, 3, 4, 5)}, state="RUNNING"), sjob(2, "physics"),
            sjob(3, "bio"), sjob(4, "physics", user="nobody", qos="gpuuser"), sjob(5, "root")]
    limits = limits_for(gov, jobs)
    by = {c.label: c for c in limits.caps}
    grp = by["AssocGrpGRES: account=physics gres/gpu=8"]
    assert grp.jobs == {"1", "2", "4"} and grp.limit == 8 and dict(grp.held) == {"1": 6}
    assert by["AssocGrpGRES: account=bio gres/gpu=12"].jobs == {"3"}
    assert by["AssocGrpJobsLimit: account=bio GrpJobs=4"].unit == "jobs"
    assert by["QOSMaxGRESPerUser: qos=gpuuser user=nobody gres/gpu=4"].jobs == {"4"}
    assert by["QOSMaxJobsPerUserLimit: qos=gpuuser user=nobody MaxJobsPU=3"].limit == 3
    assert by["AssocMaxJobsLimit: account=physics user=root MaxJobs=5"].jobs == {"1", "2"}
    assert limits.per_job["3"][0] == 8 and limits.per_job["3"][1].startswith("AssocMaxGRESPerJob")
    assert not any("5" in c.jobs for c in limits.caps)  # account root sets no limit
    # a pending job already released onto GPUs (placed, not started yet) holds them too
    promised = limits_for(gov, jobs, {"2": {"n1": 2}})
    grp2 = {c.label: c for c in promised.caps}["AssocGrpGRES: account=physics gres/gpu=8"]
    assert dict(grp2.held) == {"1": 6, "2": 2}


def test_gpu_counts_of_tres_lists() -> None:
    assert gpus_of_tres("cpu=4,gres/gpu=8,mem=1G") == 8
    assert gpus_of_tres("gres/gpu:a100=2") is None  # typed limits are not kept (docs/governance.md)
    assert gpus_of_tres("") is None
    assert gpus_of_tres("gres/gpu=99999999999") == 10_000_000


@pytest.mark.parametrize("text, message", [
    ("Cluster|Account\nc|a|extra\n", "line 2: 3 fields, the header has 2"),
    ("Cluster|Account|GrpJobs\nc|a|x1\n", "line 2: GrpJobs: 'x1' is not a whole number"),
])
def test_a_malformed_row_is_one_line_naming_the_problem(text: str, message: str) -> None:
    (row,) = parse_assoc(text)
    assert row.account == "a" and message in row.unreadable


def test_a_listing_without_its_columns_is_an_error() -> None:
    with pytest.raises(GovernanceError, match="no Cluster column"):
        parse_assoc("Account|User\na|b\n")


def test_source_reads_once_per_ttl() -> None:
    now = [0.0]
    calls: list[list[str]] = []
    files = {ASSOC_ARGV[2]: "sacctmgr-show-assoc.txt", QOS_ARGV[2]: "sacctmgr-show-qos.txt",
             "partition": "scontrol-show-partition.txt", "config": None}

    def run(argv: list[str]) -> str:
        calls.append(argv)
        name = files.get(argv[2], "sshare-parsable2-all-long.txt")
        return "AccountingStorageType   = accounting_storage/slurmdbd\n" if name is None else (REC / name).read_text()

    src = GovernanceSource(run, ttl=60.0, clock=lambda: now[0])
    assert src.current().unread == "" and len(calls) == 5  # config, partitions, assoc, qos, sshare
    now[0] = 30.0
    src.current()
    assert len(calls) == 5
    now[0] = 61.0
    src.current()
    assert calls[-2:] == [QOS_ARGV, SSHARE_ARGV] and len(calls) == 10 and calls[5] == CONFIG_ARGV


def test_recorded_sshare_gives_each_user_associations_fair_share() -> None:
    """22.05's ``sshare --parsable2 --all --long`` after chem/root used 6 GPUs, physics/root 2 and
    chem/nobody 1 for 100 s (fair tree, the default): account rows are left out, accounts unindented."""
    shares = parse_sshare((REC / "sshare-parsable2-all-long.txt").read_text())
    assert shares[("chem", "root")] == pytest.approx(0.166667)
    assert shares[("physics", "nobody")] == pytest.approx(0.666667)
    assert shares[("root", "root")] == 1.0
    assert ("chem", "") not in shares
    assert shares[("chem", "root")] < shares[("chem", "nobody")] < shares[("physics", "nobody")]
    problems: list[str] = []
    assert parse_sshare("Account|User|FairShare\n a|u|x\n b|v|0.5\n", problems) == {("b", "v"): 0.5}
    assert problems == ["sshare line 2: FairShare 'x' of user 'u' is not a number in [0, 1]"]


def test_fair_share_of_jobs_comes_from_their_association() -> None:
    text = {ASSOC_ARGV[2]: (REC / "sacctmgr-show-assoc.txt").read_text(), QOS_ARGV[2]: (REC / "sacctmgr-show-qos.txt").read_text(),
            SSHARE_ARGV[0]: (REC / "sshare-parsable2-all-long.txt").read_text()}
    text["config"], text["partition"] = "AccountingStorageType = accounting_storage/slurmdbd\n", ""
    src = GovernanceSource(lambda argv: text[argv[2] if argv[0] in ("sacctmgr", "scontrol") else argv[0]])
    jobs = [sjob(1, "chem"), sjob(2, "physics", user="nobody"), sjob(3, "nowhere")]
    assert jobs_fair_share(src, jobs) == {"1": pytest.approx(0.166667), "2": pytest.approx(0.666667)}


@pytest.mark.parametrize("release", ["22.05", "24.11", "26.05"])
def test_every_release_prints_the_same_limits(release: str) -> None:
    """The fixed ``format=`` reads alike on the three releases: the same limits on the same rows."""
    rec = DATA / "slurm-output" / release
    gov = Governance(tuple(parse_assoc((rec / "sacctmgr-show-assoc.txt").read_text())),
                     parse_qos((rec / "sacctmgr-show-qos.txt").read_text()))
    rows = {(a.account, a.user): a for a in gov.associations}
    assert (rows[("physics", "")].grp_gpus, rows[("physics", "")].max_jobs) == (8, 5)
    assert (rows[("bio", "")].grp_gpus, rows[("bio", "")].grp_jobs) == (12, 4)
    assert rows[("bio", "root")].max_gpus_per_job == 8
    assert "gpuuser" in rows[("physics", "nobody")].qos
    assert (gov.qos["gpuuser"].max_gpus_per_user, gov.qos["gpuuser"].max_jobs_per_user) == (4, 3)
    shares = parse_sshare((rec / "sshare-parsable2-all-long.txt").read_text())
    # in physics root used GPUs and nobody did not (fair tree ranks within the account); root's own
    # account used nothing
    assert shares[("physics", "root")] < shares[("physics", "nobody")] and shares[("root", "root")] == 1.0

"""Hostile and broken governance output (issue 34, M2): one bad row or line is skipped alone and holds
back only the jobs it governs; the rest of the site's limits stay; every error is a GovernanceError
naming the field (never a bare ValueError), whatever the text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hops_slurm.errors import GovernanceError
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.assoc import MAX_LIMIT, parse_assoc, parse_qos, parse_sshare
from hops_slurm.slurm.gov_limits import Governance, limits_for
from hops_slurm.slurm.partitions import parse_partitions
from tests.tests_paths import DATA

REC = DATA / "slurm-output" / "24.11"
ASSOC = (REC / "sacctmgr-show-assoc.txt").read_text()
QOS = (REC / "sacctmgr-show-qos.txt").read_text()
PARTS = (REC / "scontrol-show-partition.txt").read_text()


def pending(i: int, account: str, user: str = "root", qos: str = "normal", partition: str = "profiler") -> SlurmJob:
    return SlurmJob(job_id=str(i), user=user, account=account, qos=qos, partition=partition, state="PENDING")


def site(assoc: str = "", qos: str = "", parts: str = "") -> Governance:
    return Governance(tuple(parse_assoc(ASSOC + assoc)), parse_qos(QOS + qos), partitions=parse_partitions(PARTS + parts))


def physics_cap(gov: Governance) -> bool:
    return "AssocGrpGRES: account=physics gres/gpu=8" in {c.label for c in limits_for(gov, [pending(1, "physics")]).caps}


def test_a_pipe_in_a_user_name_skips_that_row_and_holds_back_its_jobs_only() -> None:
    gov = site(assoc="hopsgov|bio|ev|il|||1|||||normal|\n")
    assert physics_cap(gov)
    limits = limits_for(gov, [pending(1, "bio", user="ev"), pending(2, "bio", user="root"),
                              pending(3, "bio", user="ev|il"), pending(4, "physics", user="ev|il")])
    assert limits.blocked["1"].startswith("HopsLimitsUnread: sacctmgr show assoc line 12: 13 fields, the header has 12")
    # the real user, whom no row shows in bio, may be that row's; bio's users the reading shows are not held
    assert limits.blocked["3"] == "HopsLimitsUnread: user ev|il of account bio not read; a user row of it did not read"
    assert "2" not in limits.blocked and "4" not in limits.blocked


def test_a_pipe_in_an_account_name_holds_back_the_jobs_the_reading_does_not_show() -> None:
    """Read from the left, the row names account ``ev`` (not ``ev|il``); a job of ``ev|il``, which no row
    shows, may be that row's: held back too; jobs of accounts the reading shows are not."""
    gov = site(assoc="hopsgov|ev|il|||root|1|||||normal|\n")
    limits = limits_for(gov, [pending(1, "ev|il"), pending(2, "ev"), pending(3, "physics")])
    assert limits.blocked["1"].startswith("HopsLimitsUnread: account ev|il not read; sacctmgr show assoc line 12")
    assert "2" in limits.blocked and "3" not in limits.blocked


def test_a_line_separator_in_a_user_name_is_one_row() -> None:
    """U+2028 is a line break to str.splitlines; sacctmgr ends rows with \\n only."""
    gov = site(assoc="hopsgov|bio|ann\u2028e|||1|||3||normal|\n")
    assert physics_cap(gov)
    limits = limits_for(gov, [pending(1, "bio", user="ann\u2028e")])
    assert "AssocMaxJobsLimit: account=bio user=ann\u2028e MaxJobs=3" in {c.label for c in limits.caps}


def test_a_superscript_count_skips_the_row_and_names_the_field() -> None:
    gov = site(assoc="hopsgov|chem|||root|1||\u00b2|||normal|\n")
    (bad,) = [a for a in gov.associations if a.unreadable]
    assert bad.unreadable == "sacctmgr show assoc line 12: GrpJobs: '\u00b2' is not a whole number"
    assert physics_cap(gov)
    # an account row that does not read holds back its account's jobs, sub-accounts' included
    limits = limits_for(gov, [pending(1, "chem", user="nobody")])
    assert limits.blocked["1"].endswith("GrpJobs: '\u00b2' is not a whole number")


def test_an_unreadable_parent_account_holds_back_its_sub_accounts_jobs() -> None:
    """The only row of a parent account does not read: the limits over its sub-accounts are unknown."""
    gov = site(assoc="hopsgov|lab|||root|1|||||normal|extra|\nhopsgov|team|||lab|1|gres/gpu=4||||normal|\n")
    limits = limits_for(gov, [pending(1, "team"), pending(2, "physics")])
    assert limits.blocked["1"].startswith("HopsLimitsUnread: sacctmgr show assoc line 12: 13 fields")
    assert "2" not in limits.blocked and physics_cap(gov)


def test_a_5000_digit_number_is_no_smaller_than_the_largest_limit() -> None:
    gov = site(assoc="hopsgov|chem|||root|1|gres/gpu=" + "9" * 5000 + "|" + "7" * 5000 + "|||normal|\n")
    chem = [a for a in gov.associations if a.account == "chem" and not a.user and not a.unreadable][-1]
    assert (chem.grp_gpus, chem.grp_jobs) == (MAX_LIMIT, MAX_LIMIT) and physics_cap(gov)


def test_a_70_kb_allow_accounts_is_read() -> None:
    accounts = ",".join(f"acct{i:05d}" for i in range(7000)) + ",physics"
    assert len(accounts) > 70_000
    gov = site(parts=f"PartitionName=big AllowAccounts={accounts} MaxNodes=2 State=UP\n")
    assert gov.partitions["hops"].max_nodes == 1  # the other partitions stay
    limits = limits_for(gov, [pending(1, "physics", partition="big"), pending(2, "bio", partition="big")])
    assert "1" not in limits.blocked
    assert limits.blocked["2"] == "PartitionConfig: partition=big account=bio may not use it"


def test_odd_but_legal_partition_and_qos_names_are_read() -> None:
    gov = site(qos="a:b|0|gres/gpu=2||||||\n", parts="PartitionName=gpu+debug QoS=a:b MaxNodes=1 State=UP\n")
    assert gov.partitions["gpu+debug"].qos == "a:b" and gov.qos["a:b"].grp_gpus == 2
    limits = limits_for(gov, [pending(1, "physics", partition="gpu+debug")])
    assert "QOSGrpGRES: qos=a:b gres/gpu=2" in {c.label for c in limits.caps} and not limits.blocked


def test_a_partition_line_that_does_not_read_holds_back_its_jobs_only() -> None:
    gov = site(parts="PartitionName=odd MaxNodes=\u00b2 State=UP\n")
    limits = limits_for(gov, [pending(1, "physics", partition="odd"), pending(2, "physics")])
    assert limits.blocked["1"] == "HopsLimitsUnread: partition odd: MaxNodes '\u00b2' is not a whole number"
    assert "2" not in limits.blocked and gov.partitions["hops"].max_nodes == 1


def test_a_qos_row_that_does_not_read_holds_back_its_jobs_only() -> None:
    gov = site(qos="odd|0|gres/gpu:a 100=2||||||\n")
    limits = limits_for(gov, [pending(1, "physics", qos="odd"), pending(2, "physics", qos="gpuuser"),
                              pending(3, "physics", qos="unlisted")])
    assert limits.blocked["3"].startswith("HopsLimitsUnread: qos unlisted not read; sacctmgr show qos line 5")
    assert limits.blocked["1"] == "HopsLimitsUnread: sacctmgr show qos line 5: GrpTRES: GPU type 'a 100' is not a GPU type"
    assert "2" not in limits.blocked


def test_a_hex_fair_share_skips_that_user_only() -> None:
    text = (REC / "sshare-parsable2-all-long.txt").read_text()
    lines = text.split("\n")
    head = lines[0].split("|")
    col, user = head.index("FairShare"), head.index("User")
    at = next(i for i, ln in enumerate(lines[1:], 1) if ln.split("|")[user] == "nobody")
    cells = lines[at].split("|")
    cells[col] = "0x1p-2"
    lines[at] = "|".join(cells)
    problems: list[str] = []
    shares = parse_sshare("\n".join(lines), problems)
    assert len(shares) == len(parse_sshare(text)) - 1 and ("physics", "root") in shares or ("chem", "root") in shares
    assert len(problems) == 1 and "FairShare '0x1p-2'" in problems[0]
    for odd in ("nan", "inf", "1_0", "\u0661"):  # float() takes these; Slurm prints none of them
        assert parse_sshare(f"Account|User|FairShare\na|u|{odd}\n") == {}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("|\n\r=, :/0123456789aAgGrpesuNT\u00b2\u2028-.") + ["gres/gpu", "GrpTRES", "9" * 5000]),
                max_size=80).map("".join))
def test_any_text_reads_or_fails_with_a_governance_error(text: str) -> None:
    for head in ("", "Cluster|Account|User|Partition|ParentName|GrpTRES|GrpJobs|MaxJobs|MaxTRES|QOS\n",
                 "Name|Priority|GrpTRES|GrpJobs|MaxTRES|MaxTRESPU|MaxJobsPU|MaxTRESPA|MaxJobsPA|MaxTRESPerNode\n",
                 "Account|User|FairShare\n", "PartitionName=p "):
        for parse in (parse_assoc, parse_qos, parse_sshare, parse_partitions):
            try:
                parse(head + text)
            except GovernanceError:
                pass

"""hops_slurm.slurm.gov_source: governance fails closed (issue 34, M2).

A failed read keeps the last good reading (logged once, read again at the next refresh); until a first
good reading every pending job is held back; a cluster without accounting storage is asked nothing of
slurmdbd. Reads are the recorded 22.05 output (tests/data/slurm-output/22.05/).
"""

from __future__ import annotations

import logging

import pytest

from hops_slurm.errors import GovernanceError
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.assoc import ASSOC_ARGV, QOS_ARGV, SSHARE_ARGV
from hops_slurm.slurm.gov_source import CONFIG_ARGV, GovernanceSource, jobs_limits, parse_config
from hops_slurm.slurm.partitions import PARTITION_ARGV
from tests.tests_paths import DATA

REC = DATA / "slurm-output" / "22.05"
CONFIG = "ClusterName             = hopsgov\nAccountingStorageType   = accounting_storage/slurmdbd\n"


class Site:
    """The commands' recorded output; ``down`` names commands that fail (slurmdbd restarting...)."""

    def __init__(self) -> None:
        self.out = {tuple(CONFIG_ARGV): CONFIG,
                    tuple(PARTITION_ARGV): (REC / "scontrol-show-partition.txt").read_text(),
                    tuple(ASSOC_ARGV): (REC / "sacctmgr-show-assoc.txt").read_text(),
                    tuple(QOS_ARGV): (REC / "sacctmgr-show-qos.txt").read_text(),
                    tuple(SSHARE_ARGV): (REC / "sshare-parsable2-all-long.txt").read_text()}
        self.down: set[str] = set()
        self.calls: list[str] = []

    def __call__(self, argv: list[str]) -> str:
        self.calls.append(argv[0])
        if argv[0] in self.down or (argv[0] == "sacctmgr" and "sacctmgr" in self.down):
            raise GovernanceError(f"{' '.join(argv[:3])}: Connection refused (timeout)")
        return self.out[tuple(argv)]


def physics_jobs() -> list[SlurmJob]:
    running = SlurmJob(job_id="1", user="root", account="physics", qos="normal", partition="profiler", state="RUNNING",
                       gpu_alloc={"n0": (0, 1, 2, 3, 4, 5)})
    return [running, SlurmJob(job_id="2", user="root", account="physics", qos="normal", partition="profiler", state="PENDING")]


def labels(src: GovernanceSource) -> set[str]:
    limits = jobs_limits(src, physics_jobs())
    assert limits is not None
    return {c.label for c in limits.caps}


def test_a_failed_accounting_read_keeps_the_last_good_one_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    site = Site()
    src = GovernanceSource(site, ttl=60.0, retry=30.0, clock=lambda: now[0])
    assert "AssocGrpGRES: account=physics gres/gpu=8" in labels(src)
    site.down = {"sacctmgr", "sshare"}  # slurmdbd restarts
    caplog.set_level(logging.INFO, logger="hops_slurm.slurm.gov_source")
    for t in (61.0, 91.0, 121.0):
        now[0] = t
        assert "AssocGrpGRES: account=physics gres/gpu=8" in labels(src)  # no window without limits
        assert src.current().fairshare  # fair share as last read too
    failed = [r for r in caplog.records if "associations not read" in r.getMessage()]
    assert len(failed) == 1 and "keeping the last good reading" in failed[0].getMessage()
    # tried again at each refresh (retry), not after ten minutes
    assert site.calls.count("sacctmgr") == 2 + 3 * 2  # assoc and qos, at 0 then at each of the three refreshes
    site.down = set()
    now[0] = 151.0
    assert "AssocGrpGRES: account=physics gres/gpu=8" in labels(src) and src.error == ""
    assert any("associations read again" in r.getMessage() for r in caplog.records)


def test_a_failed_partition_read_keeps_the_last_good_one() -> None:
    now = [0.0]
    site = Site()
    src = GovernanceSource(site, clock=lambda: now[0])
    assert src.current().partitions["hops"].max_nodes == 1
    site.down = {"scontrol"}
    now[0] = 61.0
    gov = src.current()
    assert gov.partitions["hops"].max_nodes == 1 and gov.unread == ""


def test_until_a_first_good_read_every_pending_job_is_held_back() -> None:
    """Fail closed: slurmdbd is configured but has not answered yet; nothing new is planned (running jobs
    are Slurm's and stay); the next refresh that reads releases them."""
    now = [0.0]
    site = Site()
    site.down = {"sacctmgr"}
    src = GovernanceSource(site, retry=30.0, clock=lambda: now[0])
    limits = jobs_limits(src, physics_jobs())
    assert limits is not None and set(limits.blocked) == {"2"}
    assert limits.blocked["2"].startswith("HopsLimitsUnread: sacctmgr show assoc: Connection refused")
    site.down = set()
    now[0] = 31.0
    limits = jobs_limits(src, physics_jobs())
    assert limits is not None and not limits.blocked
    assert "AssocGrpGRES: account=physics gres/gpu=8" in {c.label for c in limits.caps}


def test_no_partition_read_ever_holds_back_pending_jobs_too() -> None:
    site = Site()
    site.down = {"scontrol"}
    limits = jobs_limits(GovernanceSource(site), physics_jobs())
    assert limits is not None and limits.blocked["2"].startswith("HopsLimitsUnread: ")
    assert "partitions not read" in limits.blocked["2"] or "scontrol show partition" in limits.blocked["2"]


def test_without_accounting_storage_sacctmgr_is_not_asked_and_nothing_is_held() -> None:
    site = Site()
    site.out[tuple(CONFIG_ARGV)] = "AccountingStorageType   = accounting_storage/none\n"
    src = GovernanceSource(site)
    limits = jobs_limits(src, physics_jobs())
    assert limits is not None and not limits.blocked and "sacctmgr" not in site.calls and "sshare" not in site.calls


def test_only_this_clusters_associations_are_kept() -> None:
    """One slurmdbd serves several clusters: ``sacctmgr show assoc`` lists them all."""
    site = Site()
    site.out[tuple(ASSOC_ARGV)] += "other|physics|||root|1|gres/gpu=1|1||||normal|\n"
    assert "AssocGrpGRES: account=physics gres/gpu=1" not in labels(GovernanceSource(site))
    assert parse_config(CONFIG)["ClusterName"] == "hopsgov"


def test_a_bad_row_is_logged_alone_and_once(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    site = Site()
    site.out[tuple(ASSOC_ARGV)] += "hopsgov|chem|eve|||1||\u00b2|||normal|\n"
    caplog.set_level(logging.INFO, logger="hops_slurm.slurm.gov_source")
    src = GovernanceSource(site, clock=lambda: now[0])
    src.current()
    now[0] = 61.0
    src.current()
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert skipped == ["governance: skipped: sacctmgr show assoc line 9: GrpJobs: '\u00b2' is not a whole number"]
    assert "AssocGrpGRES: account=physics gres/gpu=8" in labels(src)


@pytest.mark.parametrize("argv", [ASSOC_ARGV, QOS_ARGV, PARTITION_ARGV, SSHARE_ARGV])
@pytest.mark.parametrize("answer", ["", "\n", " \r\n", "sacctmgr: error: Problem talking to the database\n"])
def test_an_empty_or_headerless_answer_is_a_failed_read_not_no_limits(argv: list[str], answer: str) -> None:
    """A client that exits 0 but prints nothing (or only an error line) has not said "no limits": the
    last good reading stays (before: an empty listing was read as a site without associations, QOS or
    partition limits, and every limit was dropped until the next read)."""
    now = [0.0]
    site = Site()
    src = GovernanceSource(site, clock=lambda: now[0])
    assert "AssocGrpGRES: account=physics gres/gpu=8" in labels(src)
    assert src.current().partitions["hops"].max_nodes == 1
    site.out[tuple(argv)] = answer
    now[0] = 61.0
    gov = src.current()
    assert "AssocGrpGRES: account=physics gres/gpu=8" in labels(src)
    assert gov.qos and gov.partitions["hops"].max_nodes == 1 and gov.fairshare
    assert src.error != ""

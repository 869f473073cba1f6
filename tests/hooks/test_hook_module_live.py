"""The submit hook module inside a real slurmctld (hooks/job_submit.lua calling hooks/hops_submit.lua, with
the hops-partitions file the minicluster writes): sbatch agrees with ``hops-slurm directives check`` on a
subset of the GPU-script corpus (tests/data/gpu-scripts), a user cannot reach a ``hops-*`` reservation
through Slurm's comma list at submission or by ``scontrol update`` (issue 34, H1), and cannot edit the
engine's fields of a pending Hops job. Run on 22.05, 24.11 and 26.05 (``HOPS_TEST_SLURM``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hops_slurm.cli.directives_cmd import check
from hops_slurm.slurm.cli import CliSlurm
from hops_slurm.tools.minicluster.cluster import Minicluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from slurm_helpers import ensure_test_user  # noqa: E402

pytestmark = pytest.mark.slurm

CORPUS = Path(__file__).resolve().parents[1] / "data" / "gpu-scripts"
# the scripts whose partitions exist on the test cluster (its Hops partition is "hops", the default)
SUBSET = ["array_job", "bad_directive_gpus", "comment_form", "comment_quoted_hash", "ddp_gres4", "ddp_gres8",
          "gpus_long", "gpus_per_node", "gpus_per_node_two_nodes", "gpus_per_task", "gpus_short_G", "gpus_typed",
          "gres_and_gpus", "gres_plain", "gres_typed", "part_hops", "plain_default", "reservation_leading_comma",
          "reservation_offer", "sbatch_after_command", "sbatch_after_hops"]
HOPS_JOB = "#!/bin/bash\n#HOPS gpus=1,2 samples=1K batch-size=8 model=resnet18\ntrue\n"


@pytest.fixture
def workdir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="hops-hookmod-"))
    d.chmod(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def reservations(minicluster: Minicluster) -> Iterator[None]:
    """hops-offer and maint exist (so Slurm itself would take ``maint,hops-offer``: only the hook stops it)."""
    user = ensure_test_user()
    node = minicluster.spec.node_names()[-1]
    for name, users in (("hops-offer", "-daemon"), ("maint", f"root,{user}")):
        minicluster.run(["scontrol", "delete", f"ReservationName={name}"], check=False)
        minicluster.run(["scontrol", "create", "reservation", f"ReservationName={name}", f"Nodes={node}",
                         "StartTime=now", "Duration=30", f"Users={users}", "Flags=OVERLAP,IGNORE_JOBS"])
    yield
    for name in ("hops-offer", "maint"):
        minicluster.run(["scontrol", "delete", f"ReservationName={name}"], check=False)


def as_user(cluster: Minicluster, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cluster.user_argv(ensure_test_user(), argv, cwd), env=cluster.env(), capture_output=True,
                          text=True, timeout=60)


def sbatch(cluster: Minicluster, script: Path, workdir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return as_user(cluster, ["sbatch", "--parsable", "-H", "-o", "/dev/null", "-D", str(workdir), *extra, str(script)],
                   workdir)


def test_sbatch_with_the_hook_agrees_with_directives_check(minicluster: Minicluster, workdir: Path) -> None:
    ids, wrong = [], []
    outcomes: dict[str, tuple[str, str]] = {}
    for name in SUBSET:
        script = workdir / f"{name}.sh"
        shutil.copyfile(CORPUS / f"{name}.sh", script)
        script.chmod(0o644)
        v = check(script.read_bytes(), ("hops",))
        result = sbatch(minicluster, script, workdir)
        job = result.stdout.strip().split(";")[0]
        if result.returncode == 0:
            ids.append(job)
        outcomes[name] = (v.kind, job)
        if v.kind == "ERR" and (result.returncode == 0 or v.message not in result.stderr):
            wrong.append((name, "hook accepted or said otherwise", v.message, result.stderr[-300:]))
        if v.kind != "ERR" and result.returncode != 0:
            wrong.append((name, "refused", v.kind, result.stderr[-300:]))
    try:
        jobs = {j.job_id: j for j in CliSlurm(minicluster.env()).jobs()}
        for name, (kind, job) in outcomes.items():
            if kind == "ERR" or job not in jobs:
                continue
            j = jobs[job]
            v = check((CORPUS / f"{name}.sh").read_bytes(), ("hops",))
            if kind == "OK" and (j.admin_comment != f"hops:{v.canonical}" or j.partition != "hops"
                                 or "gpu" in j.tres_per_node or "gpu" in j.tres_per_job):
                wrong.append((name, "accepted as", j.admin_comment, j.partition, j.tres_per_node, j.tres_per_job))
            if kind == "NONE" and j.admin_comment:
                wrong.append((name, "touched", j.admin_comment))
    finally:
        if ids:
            minicluster.run(["scancel", *ids], check=False)
    assert wrong == []
    kinds = [k for k, _ in outcomes.values()]
    assert kinds.count("OK") >= 8 and kinds.count("ERR") >= 8 and kinds.count("NONE") >= 1


@pytest.mark.parametrize("reservation", [",hops-offer", "maint,hops-offer", "hops-offer", "maint,,hops-offer"])
def test_a_user_cannot_submit_into_an_engine_reservation(minicluster: Minicluster, workdir: Path, reservations: None,
                                                         reservation: str) -> None:
    script = workdir / "plain.sh"
    script.write_text("#!/bin/bash\ntrue\n")
    script.chmod(0o644)
    result = sbatch(minicluster, script, workdir, f"--reservation={reservation}")
    if result.returncode == 0:
        minicluster.run(["scancel", result.stdout.strip().split(";")[0]], check=False)
    assert result.returncode != 0 and "belongs to the Hops engine" in result.stderr, result.stderr
    ok = sbatch(minicluster, script, workdir, "--reservation=maint")  # the site's own reservation: as before
    assert ok.returncode == 0, ok.stderr
    minicluster.run(["scancel", ok.stdout.strip().split(";")[0]], check=False)


def test_a_user_cannot_update_into_an_engine_reservation_nor_edit_a_pending_hops_job(
        minicluster: Minicluster, workdir: Path, reservations: None) -> None:
    plain, hops = workdir / "plain.sh", workdir / "hops.sh"
    plain.write_text("#!/bin/bash\ntrue\n")
    hops.write_text(HOPS_JOB)
    for s in (plain, hops):
        s.chmod(0o644)
    a = sbatch(minicluster, plain, workdir).stdout.strip().split(";")[0]
    b = sbatch(minicluster, hops, workdir).stdout.strip().split(";")[0]
    assert a and b
    try:
        refused = []
        for job, change in ((a, "ReservationName=maint,hops-offer"), (a, "ReservationName=,hops-offer"),
                            (b, "NumNodes=2"), (b, "Partition=profiler"), (b, "Features=a100"),
                            (b, "ReservationName=maint")):
            r = as_user(minicluster, ["scontrol", "update", f"JobId={job}", change], workdir)
            refused.append(r.returncode != 0)
        jobs = {j.job_id: j for j in CliSlurm(minicluster.env()).jobs()}
        assert refused == [True] * 6
        assert jobs[a].reservation == "" and jobs[b].reservation == "" and jobs[b].partition == "hops"
        ok = as_user(minicluster, ["scontrol", "update", f"JobId={b}", "TimeLimit=30"], workdir)
        assert ok.returncode == 0, ok.stderr  # the owner's own fields stay the owner's
        root = minicluster.run(["scontrol", "update", f"JobId={a}", "ReservationName=maint"], check=False)
        assert root.returncode == 0, root.stderr
    finally:
        minicluster.run(["scancel", a, b], check=False)


HETJOB = ("#!/bin/bash\n#SBATCH -p hops\n#SBATCH hetjob\n#SBATCH -p hops --reservation={resv}\ntrue\n")


@pytest.mark.parametrize(("script", "extra"), [
    (HETJOB.format(resv=",hops-offer"), ()),  # a heterogeneous job's second component (its own job_desc)
    (HETJOB.format(resv="maint,hops-offer"), ()),
    ("#!/bin/bash\ntrue\n", ("--array=0-3", "--reservation=maint,hops-offer")),  # an array
    ("#!/bin/bash\ntrue\n", ("--begin=now+3600", "--reservation=,hops-offer")),  # a start in the future
    ("#!/bin/bash\n#SBATCH --reservation=,hops-offer\ntrue\n", ()),  # in the script, not on the command line
])
def test_no_component_array_or_later_start_reaches_an_engine_reservation(
        minicluster: Minicluster, workdir: Path, reservations: None, script: str, extra: tuple[str, ...]) -> None:
    """Held-out shapes of H1: Slurm hands every component of a heterogeneous job, every array and a job
    that starts later to the hook with the reservation as written; each is refused."""
    path = workdir / "job.sh"
    path.write_text(script)
    path.chmod(0o644)
    result = sbatch(minicluster, path, workdir, *extra)
    if result.returncode == 0:
        minicluster.run(["scancel", result.stdout.strip().split(";")[0]], check=False)
    assert result.returncode != 0 and "belongs to the Hops engine" in result.stderr, (result.stdout, result.stderr)


def test_an_array_task_or_a_gres_alias_update_is_refused(minicluster: Minicluster, workdir: Path,
                                                         reservations: None) -> None:
    """``scontrol update`` of one task of an array into ``,hops-offer``, and ``Gres=`` (the older name of
    TresPerNode) on a pending Hops job, are refused like the forms above."""
    plain, hops = workdir / "plain.sh", workdir / "hops.sh"
    plain.write_text("#!/bin/bash\ntrue\n")
    hops.write_text(HOPS_JOB)
    for s in (plain, hops):
        s.chmod(0o644)
    a = sbatch(minicluster, plain, workdir, "--array=0-3").stdout.strip().split(";")[0]
    b = sbatch(minicluster, hops, workdir).stdout.strip().split(";")[0]
    assert a and b
    try:
        refused = []
        for job, change in ((f"{a}_1", "ReservationName=,hops-offer"), (a, "ReservationName=maint,,hops-offer"),
                            (b, "Gres=gpu:2"), (b, "TresPerNode=gres/gpu:2"), (b, "ReqNodeList=" + minicluster.spec.node_names()[0])):
            r = as_user(minicluster, ["scontrol", "update", f"JobId={job}", change], workdir)
            refused.append(r.returncode != 0)
        jobs = CliSlurm(minicluster.env()).jobs()
        assert refused == [True] * 5
        assert not [j.job_id for j in jobs if "hops-" in j.reservation]
    finally:
        minicluster.run(["scancel", a, b], check=False)

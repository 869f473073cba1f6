"""Accounting on the minicluster (issue 8): ``accounting = true`` brings up MariaDB and slurmdbd with
the cluster, real GPU jobs reach ``sacct`` (GPU TRES included), the report's Start/End agree with
``sacct``, and ``down`` leaves no process of that cluster behind.

Uses its own small cluster (tests/data/minicluster-accounting.toml: own state directory and ports), so
it runs beside the shared test cluster. The state directory is wiped first: a fresh slurmctld numbers
jobs from 1 again, and an old accounting database would already hold jobs with those ids.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.tools.minicluster import conf, processes
from hops_slurm.tools.minicluster.slurmdbd import Accounting
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.minicluster.spec import load_spec
from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.report.sacct import SacctJob, cross_check, run_sacct
from hops_slurm.report.source import write_sqlite
from hops_slurm.slurm.cli import CliSlurm
from slurm_helpers import leftover_processes, load_test_spec, wait_for_state
from tests_paths import DATA

pytestmark = pytest.mark.slurm

ACCOUNTING_ROLES = ("mariadb", "slurmdbd")


@pytest.fixture(scope="module")
def acct_cluster() -> Iterator[Minicluster]:
    if os.geteuid() != 0:
        pytest.fail("the accounting test runs MariaDB, slurmdbd and Slurm daemons and needs root (CI runs as root)")
    cluster = Minicluster(load_test_spec(DATA / "minicluster-accounting.toml"))
    cluster.down()  # a killed earlier run may have left it up
    shutil.rmtree(cluster.state, ignore_errors=True)
    cluster.up()
    yield cluster
    cluster.down()


@pytest.fixture
def slurm_env(acct_cluster: Minicluster, monkeypatch: pytest.MonkeyPatch) -> Minicluster:
    """Point sacct (which run_sacct starts with this process's environment) at the cluster."""
    monkeypatch.setenv("SLURM_CONF", str(acct_cluster.conf_path))
    monkeypatch.setenv("PATH", acct_cluster.env()["PATH"])  # a Slurm root: its client wrappers first
    return acct_cluster


def _record(cluster: Minicluster, job_id: str, config: dict[str, int]) -> JobRecord:
    """A JobRecord the way the engine would write it: times and state as the adapter reads them, the GPU
    config seen while the job ran (a finished job's record no longer lists GPU indices)."""
    job = CliSlurm(cluster.env()).job(job_id)
    assert job is not None and job.start_time and job.end_time and job.submit_time, f"job {job_id}: {job}"
    return JobRecord(
        job_id=job_id,
        name=job.name,
        user=job.user,
        partition=job.partition,
        submit=job.submit_time,
        start=job.start_time,
        end=job.end_time,
        state=job.state,
        requirements=[sum(config.values())],
        placements=[PlacementRecord(start=job.start_time, end=job.end_time, config=config, gpu_type="v100")],
    )


def _sacct_until_done(job_ids: list[str], json_output: bool, timeout: float = 30.0) -> dict[str, SacctJob]:
    """slurmctld hands job records to slurmdbd asynchronously: wait until every job has its end and
    none is slurmdbd's provisional stand-in (its job start can arrive after its end, see report.sacct)."""
    deadline = time.monotonic() + timeout
    while True:
        jobs = {j.job_id: j for j in run_sacct(job_ids, json_output=json_output, timeout=30)}
        if all(i in jobs and jobs[i].end is not None and not jobs[i].provisional for i in job_ids):
            return jobs
        if time.monotonic() > deadline:
            raise AssertionError(f"sacct still lacks finished records after {timeout} s: {jobs}")
        time.sleep(0.3)


def _listening_addresses(port: int) -> list[str]:
    """Local addresses (hex, as in /proc/net/tcp{,6}) with a socket listening on ``port``."""
    found = []
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A = TCP_LISTEN
                found.append(address)
    return found


def test_up_starts_accounting_before_slurmctld_and_twice_is_harmless(acct_cluster: Minicluster) -> None:
    roles = list(acct_cluster.registry.load())
    assert roles.index("mariadb") < roles.index("slurmdbd") < roles.index("slurmctld")
    before = {r: d.pid for r, d in acct_cluster.registry.load().items()}
    status = acct_cluster.up()
    assert status.up
    assert {r: d.pid for r, d in acct_cluster.registry.load().items()} == before
    # The cluster is registered with slurmdbd, and only once.
    clusters = acct_cluster.run(["sacctmgr", "-n", "-P", "list", "cluster", "format=Cluster,ControlPort"]).stdout.split()
    assert clusters == [f"{acct_cluster.spec.cluster_name}|{acct_cluster.spec.ports.slurmctld}"]
    # Secrets stay root's: slurmdbd.conf carries the database password, as does the password file.
    acct = acct_cluster.accounting
    assert acct is not None
    for secret in (acct.conf_file, acct.password_file):
        st = secret.stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o600), secret
    # MariaDB is private: the database lives under the state directory and listens on 127.0.0.1 only.
    argv = " ".join(acct_cluster.registry.load()["mariadb"].argv)
    assert f"--datadir={acct_cluster.state}/" in argv and "--bind-address=127.0.0.1" in argv
    assert _listening_addresses(acct_cluster.spec.ports.mariadb) == ["0100007F"]  # 127.0.0.1 only, no IPv6


def test_report_start_end_match_sacct(slurm_env: Minicluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = slurm_env
    sbatch = ["sbatch", "--parsable", "-o", "/dev/null"]
    # One job placed by hand with scontrol, as the engine does: held, moved to g2, released.
    placed = cluster.run([*sbatch, "-H", "--gres=gpu:v100:1", "--wrap", "sleep 3"]).stdout.strip()
    cluster.run(["scontrol", "update", f"JobId={placed}", "NodeList=g2"])
    cluster.run(["scontrol", "release", placed])
    spread = cluster.run([*sbatch, "-N2", "--gres=gpu:v100:1", "--wrap", "sleep 3"]).stdout.strip()
    pinned = cluster.run([*sbatch, "-w", "g1", "--gres=gpu:v100:1", "--wrap", "sleep 2"]).stdout.strip()
    job_ids = [placed, spread, pinned]

    configs: dict[str, dict[str, int]] = {}
    for job_id in job_ids:
        wait_for_state(cluster, job_id, {"RUNNING"}, timeout=20)
        running = CliSlurm(cluster.env()).job(job_id)
        assert running is not None
        configs[job_id] = running.gpu_config()
        assert sorted(configs[job_id]) == list(running.nodes)
    assert configs == {placed: {"g2": 1}, spread: {"g1": 1, "g2": 1}, pinned: {"g1": 1}}
    for job_id in job_ids:
        wait_for_state(cluster, job_id, {"COMPLETED"}, timeout=20)
    records = [_record(cluster, job_id, configs[job_id]) for job_id in job_ids]

    for json_output in (True, False):
        acct = _sacct_until_done(job_ids, json_output)
        # Start/End/state/nodes must agree: the -N2 job's accounting lists both nodes.
        assert cross_check(records, acct.values(), tolerance=1.0) == [], f"json={json_output}: {acct}"
        assert acct[spread].nodes == ("g1", "g2")
        for rec in records:
            got = acct[rec.job_id]
            assert rec.start is not None and got.start is not None and abs(got.start - rec.start) <= 1.0
            assert rec.end is not None and got.end is not None and abs(got.end - rec.end) <= 1.0
            assert got.state == "COMPLETED"
            assert got.gpus == sum(configs[rec.job_id].values())  # gres/gpu TRES are accounted

    # The report itself, reading the engine's records and cross-checking with sacct --json.
    db = write_sqlite(tmp_path / "records.sqlite", records)
    assert main(["report", "--records", str(db), "--sacct", "json", "--json"]) == 0
    out, err = capsys.readouterr()
    assert [line for line in err.splitlines() if "warning" in line] == []
    doc = json.loads(out)
    assert doc["sacct_disagreements"] == []
    acct = _sacct_until_done(job_ids, json_output=True)
    rows = {j["job_id"]: j for j in doc["jobs"]}
    assert sorted(rows) == sorted(job_ids)
    for job_id in job_ids:
        assert (rows[job_id]["start"], rows[job_id]["end"]) == (acct[job_id].start, acct[job_id].end)


def _with_env(pid: int, key: str, value: str) -> bool:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{key}={value}".encode() in raw.split(b"\0")


def test_down_stops_accounting_and_leaves_nothing(acct_cluster: Minicluster) -> None:
    daemons = acct_cluster.registry.load()
    assert all(processes.owns(daemons[r]) for r in ACCOUNTING_ROLES)
    stopped = acct_cluster.down()
    assert set(stopped) == set(daemons)
    assert stopped.index("slurmctld") < stopped.index("slurmdbd") < stopped.index("mariadb") < stopped.index("munged")
    assert [r for r, d in daemons.items() if processes.is_alive(d.pid)] == []
    assert leftover_processes(acct_cluster.state) == []
    # slurmdbd's argv names nothing of ours (it finds slurmdbd.conf beside $SLURM_CONF): look at environments.
    conf = str(acct_cluster.conf_path)
    ours = [
        pid
        for pid in (int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit())
        if pid != os.getpid() and processes.is_alive(pid) and _with_env(pid, "SLURM_CONF", conf)
    ]
    assert ours == []
    assert acct_cluster.down() == []
    assert not (acct_cluster.rooted and acct_cluster.rooted.mounts_file.exists() and
                acct_cluster.rooted.mounts_file.read_text().strip() != "[]")


def test_accounting_config_points_slurm_and_slurmdbd_at_the_private_services() -> None:
    """Pure: what ``up`` writes for accounting (no daemons needed)."""
    spec = load_spec(DATA / "minicluster-accounting.toml")
    s = spec.state_dir
    slurm_conf = conf.render_slurm_conf(spec, "host1").splitlines()
    for line in (
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStoragePort=7119",
        f"AccountingStoragePass={s}/run/munge.socket",  # sacct/slurmctld -> slurmdbd use this munge socket
        "AccountingStorageTRES=gres/gpu",
    ):
        assert line in slurm_conf
    dbd = conf.render_slurmdbd_conf(spec, "host1", "slurm", "pw").splitlines()
    for line in ("DbdPort=7119", "StorageHost=127.0.0.1", "StoragePort=13516", "StorageUser=slurm", "StoragePass=pw",
                 "StorageLoc=slurm_acct_hopsacct", f"AuthInfo=socket={s}/run/munge.socket"):
        assert line in dbd
    argv = Accounting(spec).argv("mariadb")
    assert argv[1] == "--no-defaults"  # never the host's /etc/mysql settings
    assert {"--port=13516", f"--datadir={s}/mariadb/data", f"--socket={s}/mariadb/run/mariadb.sock"} <= set(argv)

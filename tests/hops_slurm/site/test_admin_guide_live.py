"""docs/admin-guide.md's install path walked command by command on the site-shaped cluster (issue 33), so the
guide and the product cannot drift: the marked blocks (tests/docs_walk.py) of "Install", "The submit hook",
"Hops partitions", "Enable" and "Leaving Hops", run as written in a shell, with the guide's system paths
substituted by this test's folders (:data:`PATHS`), from building the wheel in a copy of the checkout to
leaving Hops, after which the site's own hook alone accepts and runs a plain job.

What the guide leaves to the administrator's hands (editing hops.toml, taking the lines `site leave` names out
of job_submit.lua) the test does itself; the lines only a real host runs (systemctl, journalctl) it replaces
by the equivalent on the minicluster (tests/docs_walk.py, ``HOST_ONLY``), and two substitutions keep the
walk offline: `python -m build` without build isolation, and `pip install` of the wheel without its
dependencies, which the new virtualenv reads from this project's (as tests/wheel_venv.py does).

The cluster is the one this folder's live tests share (conftest.py); the site's hook and the module go back
in place for the next module (site_helpers.reinstall_hooks).
"""

from __future__ import annotations

import re
import shlex
import shutil
import site
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.minicluster.processes import stop_child
from slurm_helpers import job_fields, wait_until
from tests import wheel_venv
from tests.docs_walk import HOST_ONLY, WALKED, Block, walked_blocks

pytestmark = pytest.mark.slurm

#: the guide's system paths -> under the test's folder (``{work}``) or the cluster's (``{etc}``), longest first
PATHS = (
    ("/opt/hops-slurm/venv", "{work}/opt/venv"),
    ("/root/hops-site", "{work}/hops-site"),
    ("/etc/hops-slurm", "{work}/etc-hops-slurm"),
    ("/etc/systemd/system", "{work}/systemd"),
    ("/usr/local/bin", "{work}/bin"),
    ("/var/lib/hops-slurm", "{work}/state"),
    ("/etc/slurm", "{etc}"),
)
#: offline: the build without isolation (build and setuptools are in the dev extra), the wheel without downloads
OFFLINE = (
    ("python3 -m pip install build", f"{shlex.quote(sys.executable)} -m pip install --no-index build"),
    ("python3 -m build", f"{shlex.quote(sys.executable)} -m build --no-isolation"),
    ("python3 -m venv", f"{shlex.quote(sys.executable)} -m venv"),
    ("/bin/pip install ", "/bin/pip install --no-deps --no-index --quiet "),
)
HOPS_PARTITION = "gpu-hops"


class Walk:
    """The shell the guide's commands run in: its working directory carries over from line to line (``cd``)."""

    def __init__(self, cluster: Minicluster, work: Path) -> None:
        self.cluster = cluster
        self.work = work
        self.etc = cluster.spec.state_dir / "etc"
        self.cwd = work / "checkout"
        self.blocks = walked_blocks()
        self.walked: list[str] = []
        self.daemon: subprocess.Popen[str] | None = None
        self.config = Path(self.path("/etc/hops-slurm/hops.toml"))
        env = cluster.env()
        self.env = {**env, "PATH": f"{work / 'bin'}:{env['PATH']}", "HOPS_CONFIG": str(self.config),
                    "HOPS_JOB_ENV_DIR": str(work / "state" / "jobs")}

    def path(self, text: str) -> str:
        for guide, here in PATHS:
            text = text.replace(guide, here.format(work=self.work, etc=self.etc))
        return text

    def block(self, block_id: str) -> Block:
        self.walked.append(block_id)
        return self.blocks[block_id]

    def sh(self, line: str, expect_ok: bool = True) -> subprocess.CompletedProcess[str]:
        """One line of the guide, as substituted, in bash (``set -e``); fails the test unless it exits 0."""
        text = self.path(line)
        for guide, here in OFFLINE:
            text = text.replace(guide, here)
        script = f"set -e -o pipefail\ncd {shlex.quote(str(self.cwd))}\n{text}\npwd > {shlex.quote(str(self.work / 'cwd'))}\n"
        proc = subprocess.run(["bash", "-c", script], env=self.env, capture_output=True, text=True, timeout=300,
                              check=False)
        if proc.returncode == 0:
            self.cwd = Path((self.work / "cwd").read_text().strip())
        if expect_ok:
            assert proc.returncode == 0, f"`{line}` (run as `{text}`): {proc.stdout}{proc.stderr}"
        return proc

    def run(self, block_id: str, instead: dict[str, Callable[[], None]] | None = None,
            after: dict[str, Callable[[subprocess.CompletedProcess[str]], None]] | None = None) -> None:
        """Every command line of the block in order: the host-only ones by their equivalent in ``instead``."""
        instead, after = instead or {}, after or {}
        for line in self.block(block_id).commands():
            if line in HOST_ONLY:
                instead[line]()
                continue
            proc = self.sh(line, expect_ok=line not in after)
            if line in after:
                after[line](proc)

    def sbatch(self, script: str, *opts: str) -> subprocess.CompletedProcess[str]:
        path = self.work / "jobs" / f"job{len(list((self.work / 'jobs').glob('job*.sh')))}.sh"
        path.write_text(script)
        path.chmod(0o755)
        return subprocess.run(["sbatch", "--parsable", "-D", str(path.parent), "-o", f"{path}.out", *opts, str(path)],
                              env=self.env, capture_output=True, text=True, timeout=30, check=False)

    def submit(self, script: str, *opts: str) -> str:
        proc = self.sbatch(script, *opts)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip().split(";")[0]

    def fields(self, job: str) -> dict[str, str]:
        return job_fields(self.cluster, job)

    def start_unit(self, unit: Path) -> None:
        """``systemctl enable --now``: the unit's ExecStart, with its Environment, the guide's paths substituted."""
        lines = [x.strip() for x in unit.read_text().splitlines()]
        unit_env = dict(x.split("=", 2)[1:] for x in lines if x.startswith("Environment="))
        (exec_start,) = [x.split("=", 1)[1] for x in lines if x.startswith("ExecStart=")]
        env = {**self.env, **{k: self.path(v) for k, v in unit_env.items()}}
        log = (self.work / "daemon.log").open("a")
        self.daemon = subprocess.Popen(shlex.split(self.path(exec_start)), env=env, stdout=log,
                                       stderr=subprocess.STDOUT, text=True, cwd=self.work)

    def stop_unit(self) -> None:
        if self.daemon is not None:
            stop_child(self.daemon, timeout=30)
            self.daemon = None

    def daemon_log(self) -> str:
        return (self.work / "daemon.log").read_text() if (self.work / "daemon.log").exists() else ""


def _edited_config(walk: Walk, sample: str) -> str:
    """The administrator's edit of the copied sample ("The keys that matter first"): the Hops partition and
    hook_dir as the guide's "Hops partitions" block says (its first partition: the site has no `gpu-old`), the
    state directory, and short periods for a test."""
    keys = tomllib.loads(walk.blocks["partitions-config"].text())
    assert "[slurm]" in sample and "[engine]" in sample, "the shipped sample lost its tables"
    first, hook_dir = keys["slurm"]["partitions"][0], walk.path(keys["engine"]["hook_dir"])
    return f"""[slurm]
partitions = ["{first}"]
profiler_partition = "profiler"
[scheduler]
round_length = 8
queue_refresh = 4
[planner]
time_limit = 5
[engine]
probe_size = "tiny"
probe_iterations = 3
probe_time_limit = 60
probe_device = "cpu"
monitor_interval = 2
settle_timeout = 10
hook_dir = "{hook_dir}"
[paths]
state_dir = "{walk.work / 'state'}"
"""


@pytest.fixture
def walk(site_cluster: Minicluster) -> Iterator[Walk]:
    work = Path(tempfile.mkdtemp(prefix="hops-guide-walk-"))
    work.chmod(0o755)  # the daemon's probes run its python
    for sub in ("bin", "systemd", "jobs"):
        (work / sub).mkdir()
    (work / "jobs").chmod(0o777)
    wheel_venv.copy_sources(work / "checkout")
    w = Walk(site_cluster, work)
    try:
        yield w
    finally:
        w.stop_unit()
        site_cluster.run(["scancel", "--user=root"], check=False)
        shutil.rmtree(work, ignore_errors=True)


def test_the_admin_guides_install_path_walked_from_the_wheel_to_leaving(walk: Walk) -> None:
    # the site before Hops: its own hook (which has the guide's two calls in it), no Hops files beside it
    for name in ("hops_submit.lua", "hops_directives.lua", "hops_offer.lua", "hops-partitions", "hops-offer"):
        (walk.etc / name).unlink(missing_ok=True)

    def deps_offline(_: subprocess.CompletedProcess[str]) -> None:  # the wheel's dependencies: this project's
        (own,) = Path(walk.path("/opt/hops-slurm/venv")).glob("lib/python*/site-packages")
        (own / "project-deps.pth").write_text("".join(f"{p}\n" for p in site.getsitepackages()))

    def ok(proc: subprocess.CompletedProcess[str]) -> None:
        assert proc.returncode == 0, proc.stdout + proc.stderr

    walk.run("install-build", after={"python3 -m venv /opt/hops-slurm/venv": lambda p: (ok(p), deps_offline(p))})
    assert walk.cwd == walk.work / "hops-site" and (walk.work / "bin" / "hops-slurm").exists()

    def config_checked(proc: subprocess.CompletedProcess[str]) -> None:
        ok(proc)
        assert str(walk.config) in proc.stdout, proc.stdout
    walk.run("install-config", after={"hops-slurm config check": config_checked})
    walk.config.write_text(_edited_config(walk, walk.config.read_text()))
    walk.sh("hops-slurm config check")

    def refused(proc: subprocess.CompletedProcess[str]) -> None:  # before the daemon: no partition file yet
        assert proc.returncode != 0 and "the submit hook knows no Hops partition (hops-partitions:" in proc.stderr, proc
    sbatch_line = next(x for x in walk.blocks["install-hook"].commands() if x.startswith("sbatch"))
    walk.run("install-hook", instead={"systemctl restart slurmctld": lambda: walk.cluster.run(["scontrol", "reconfigure"])},
             after={sbatch_line: refused})

    script = "#!/bin/bash\n" + "\n".join(walk.block("job-script").lines) + '\necho "HOPS_GPUS=$HOPS_GPUS"\n'

    hook = (walk.etc / "job_submit.lua").read_text()
    calls = [x for x in walk.block("site-hook-calls").commands() if x.startswith("local rc = hops.")]
    assert len(calls) == 2 and all(c in hook for c in calls), calls

    config = tomllib.loads(walk.config.read_text())
    guide = tomllib.loads(walk.block("partitions-config").text())
    assert config["slurm"]["partitions"][0] == guide["slurm"]["partitions"][0]
    assert config["engine"]["hook_dir"] == walk.path(guide["engine"]["hook_dir"]) == str(walk.etc)

    def journal() -> None:
        wait_until(lambda: (walk.etc / "hops-partitions").exists(), "the daemon writing hops-partitions", 60)
        assert walk.daemon is not None and walk.daemon.poll() is None, walk.daemon_log()[-3000:]
    walk.run("enable-daemon", instead={
        "systemctl daemon-reload && systemctl enable --now hops-slurm": lambda: walk.start_unit(
            walk.work / "systemd" / "hops-slurm.service"),
        "journalctl -u hops-slurm -f": journal})

    again = walk.sh(sbatch_line, expect_ok=False)  # the daemon wrote the file: refused for its directives now
    assert again.returncode != 0 and "#HOPS batch-size: required key is missing" in again.stderr, again

    written = (walk.etc / "hops-partitions").read_text().splitlines()
    example = walk.block("partitions-file").lines
    assert written[0] == example[0] and written[1:] == [f"partition {HOPS_PARTITION}"]
    assert all(re.fullmatch(r"partition [A-Za-z0-9._-]{1,64}", x) for x in example[1:])

    job = walk.submit(script, "-t", "5")  # the guide's job script, in the default Hops partition
    assert walk.fields(job)["Partition"] == HOPS_PARTITION and walk.fields(job)["AdminComment"].startswith("hops:")
    wait_until(lambda: walk.fields(job)["JobState"] == "COMPLETED", "the guide's #HOPS job ran", 120)
    out = Path(f"{walk.work / 'jobs' / 'job0.sh'}.out").read_text()
    assert re.search(r"^HOPS_GPUS=\d+$", out, re.MULTILINE), out

    walk.run("inspect")
    walk.run("enable-failopen", instead={
        "systemctl daemon-reload && systemctl enable --now hops-slurm-failopen.timer": lambda: None})
    assert {p.name for p in (walk.work / "systemd").iterdir()} >= {"hops-slurm-failopen.service", "hops-slurm-failopen.timer"}

    walk.run("leave-stop", instead={"systemctl disable --now hops-slurm hops-slurm-failopen.timer": walk.stop_unit})
    held = walk.submit(script, "-t", "5")
    assert walk.fields(held)["Priority"] == "0"

    named: list[int] = []

    def left(proc: subprocess.CompletedProcess[str]) -> None:
        ok(proc)
        assert f"leave: job {held} released asking Slurm for" in proc.stdout, proc.stdout
        named.extend(int(x.split()[2].rstrip(":")) for x in proc.stdout.splitlines() if x.startswith("leave:   line "))

    def dry(proc: subprocess.CompletedProcess[str]) -> None:
        ok(proc)
        assert walk.fields(held)["Priority"] == "0", "--dry-run released a job"
    walk.run("leave", after={"hops-slurm site leave --dry-run": dry, "hops-slurm site leave": left})
    wait_until(lambda: walk.fields(held)["JobState"] == "COMPLETED", "the job handed to Slurm ran", 60)

    lines = hook.splitlines()  # the administrator takes the named lines out
    assert named and all("hops" in lines[n - 1] for n in named), named
    (walk.etc / "job_submit.lua").write_text("".join(x + "\n" for n, x in enumerate(lines, start=1) if n not in named))
    walk.run("leave-reconfigure")
    assert not list(walk.etc.glob("hops_*.lua"))

    plain = walk.submit("#!/bin/bash\ntrue\n", "-t", "5")  # the site's hook alone: its rules, no Hops
    wait_until(lambda: walk.fields(plain)["JobState"] == "COMPLETED", "a plain job under the site's hook alone", 60)
    assert walk.fields(plain)["Account"] == "research"
    assert walk.sbatch("#!/bin/bash\ntrue\n").returncode != 0  # the site's rule: no job without a time limit

    assert sorted(walk.walked) == sorted(WALKED), "walk every block docs_walk.WALKED lists, and only those"

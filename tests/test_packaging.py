"""The wheel carries the product: ``python -m build`` gives an sdist and a wheel holding every file a site
installs besides the code (:mod:`hops_slurm.bundled`), and the commands work from a virtualenv outside the
checkout that has only that wheel, run from another folder, without touching the checkout.

Offline: the build runs without isolation (setuptools, wheel and build are in the dev extra) on a copy of
the checkout's files; the new virtualenv gets the wheel with ``--no-deps`` and reads the dependencies from
this project's virtualenv (a ``.pth`` line naming its site-packages, after the venv's own)."""

from __future__ import annotations

import os
import subprocess
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hops_slurm.config_path import SYSTEM_CONFIG
from tests import wheel_venv

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = "hops_slurm/_bundle/"


def _shipped() -> set[str]:
    """What the package must carry: every hook and everything under etc/, as paths inside the bundle."""
    files = {f"hooks/{p.name}" for p in (ROOT / "hooks").glob("*.lua")}
    files |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "etc").rglob("*") if p.is_file()
              and "__pycache__" not in p.parts}
    return files


def _checkout_state() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--ignored", "--untracked-files=all"],
                          capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """(wheel, sdist, the checkout's git status before) built from a copy of the checkout."""
    before = _checkout_state()
    wheel, sdist = wheel_venv.build(tmp_path_factory.mktemp("build"))
    yield wheel, sdist, before


def test_the_wheel_and_the_sdist_carry_every_site_file(built: tuple[Path, Path, str]) -> None:
    wheel, sdist, _ = built
    shipped = _shipped()
    assert {"hooks/job_submit.lua", "etc/hops.toml", "etc/slurm.conf.d/hops.conf", "etc/grafana/hops-slurm.json",
            "etc/systemd/hops-slurm.service", "etc/cron/hops-slurm", "etc/clusters/paper-64.toml",
            "etc/demo/workload.toml"} <= shipped
    in_wheel = {n.removeprefix(BUNDLE) for n in zipfile.ZipFile(wheel).namelist() if n.startswith(BUNDLE)}
    assert shipped <= in_wheel, sorted(shipped - in_wheel)
    assert any(n.startswith("hops_slurm/data/gavel/") for n in zipfile.ZipFile(wheel).namelist())
    with tarfile.open(sdist) as tar:
        prefix = f"{sdist.name.removesuffix('.tar.gz')}/{BUNDLE}"
        in_sdist = {m.name.removeprefix(prefix) for m in tar.getmembers() if m.isfile() and m.name.startswith(prefix)}
    assert shipped <= in_sdist, sorted(shipped - in_sdist)


def test_every_command_works_from_a_virtualenv_with_only_the_wheel(built: tuple[Path, Path, str],
                                                                     tmp_path: Path) -> None:
    wheel, _, before = built
    venv = tmp_path / "venv"
    wheel_venv.install(wheel, venv)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("HOPS_CONFIG", "HOPS_SLURM_RECORDS", "PYTHONPATH")}

    def hops(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(venv / "bin" / "hops-slurm"), *argv], cwd=work, env=env, capture_output=True,
                              text=True, timeout=300)

    where = subprocess.run([str(venv / "bin" / "python"), "-c", """if True:
        import hops_slurm
        from hops_slurm.bundled import bundled
        from hops_slurm.hooklua import HOOK
        from hops_slurm.sim.cluster_spec import CLUSTER_DIR
        from hops_slurm.tools.demo.run import JOBS_DIR
        from hops_slurm.tools.minicluster.spec import default_spec_path
        print(bundled('etc', 'demo', 'jobs', 'resnet18-a.sh'), hops_slurm.__file__, HOOK, CLUSTER_DIR, JOBS_DIR,
              default_spec_path())
        """], cwd=work, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert len(where) == 6 and all(Path(p).exists() and Path(p).resolve().is_relative_to(venv) for p in where), where
    demo_job = where[0]  # every shipped file from the wheel, none from the checkout

    assert hops("--help").returncode == 0
    for command in ("demo", "whatif", "minicluster", "site", "report", "calibrate"):
        shown = hops(command, "--help")
        assert shown.returncode == 0 and "usage: hops-slurm" in shown.stdout, (command, shown)
    sample = hops("config", "check", "--sample")
    assert sample.returncode == 0 and f"{venv}" in sample.stdout and ": OK (sample)" in sample.stdout, sample
    if not SYSTEM_CONFIG.exists():  # the daemon's file: missing here, and said so
        missing = hops("config", "check")
        assert missing.returncode == 1 and str(SYSTEM_CONFIG) in missing.stderr, missing

    out = work / "site"
    files = hops("site", "files", str(out))
    assert files.returncode == 0, files
    for rel in ("hooks/job_submit.lua", "hooks/hops_offer.lua", "etc/hops.toml", "etc/slurm.conf.d/hops.conf",
                "etc/systemd/hops-slurm.service", "etc/cron/hops-slurm", "etc/grafana/hops-slurm.json"):
        assert (out / rel).read_bytes() == (ROOT / rel).read_bytes(), rel  # the admin guide's paths, inside DIR
        assert f"wrote {out / rel}" in files.stdout
    assert hops("config", "check", str(out / "etc" / "hops.toml")).returncode == 0  # the template the admin edits

    assert hops("simulate", "--help").returncode == 0
    sim = hops("simulate", "--cluster", "paper-64", "--workload", "paper:jobs=4", "--policies", "fifo-greedy",
               "--out", str(work / "sim"), "--no-progress")
    assert sim.returncode == 0 and "fifo-greedy" in sim.stdout and (work / "sim" / "summary.json").is_file(), sim
    directives = hops("directives", "check", demo_job)
    assert directives.returncode == 0 and "gpus=" in directives.stdout, directives

    assert _checkout_state() == before  # nothing written into the checkout, not even an ignored file

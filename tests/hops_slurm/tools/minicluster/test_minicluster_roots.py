"""Slurm roots without building one: the release switch, the per-release files, the health check and
the client wrappers (pure or on a temporary directory; the live tests run real roots)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from hops_slurm.errors import MiniclusterError
from hops_slurm.tools.minicluster import conf, roots
from hops_slurm.tools.minicluster.chroot import RootRuntime
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.minicluster.spec import load_spec
from tests_paths import DATA


def test_release_switch_gives_its_own_state_directory_and_keeps_the_rest() -> None:
    spec = load_spec(DATA / "minicluster-test.toml")
    assert spec.slurm == "22.05" and load_spec(DATA / "minicluster-test.toml", slurm="22.05") == spec
    newer = load_spec(DATA / "minicluster-test.toml", slurm="24.11")
    assert newer.slurm == "24.11"
    assert newer.state_dir == spec.state_dir.with_name(spec.state_dir.name + "-slurm24.11")
    assert newer.ports == spec.ports and newer.nodes == spec.nodes


def test_unknown_release_is_refused_naming_it() -> None:
    with pytest.raises(MiniclusterError, match="--slurm 23.02"):
        load_spec(DATA / "minicluster-test.toml", slurm="23.02")
    with pytest.raises(MiniclusterError, match="Slurm 23.02 has no Debian root"):
        roots.suite_of("23.02")


def test_cgroup_conf_only_for_the_newer_releases() -> None:
    spec = load_spec(DATA / "minicluster-test.toml")
    assert conf.render_cgroup_conf(spec) == ""
    for release in ("24.11", "26.05"):
        assert "CgroupPlugin=disabled" in conf.render_cgroup_conf(spec.with_release(release)).splitlines()


def test_host_release_has_no_root_and_runs_users_with_runuser() -> None:
    cluster = Minicluster(load_spec(DATA / "minicluster-test.toml"))
    assert cluster.rooted is None
    assert cluster.user_argv("alice", ["sbatch", "x.sh"])[:4] == ["runuser", "-u", "alice", "--"]
    assert "PATH" not in {k for k, v in cluster.env().items() if v != os.environ.get(k)}


def test_a_root_without_a_valid_stamp_is_not_healthy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOPS_ROOTS_DIR", str(tmp_path))
    root = roots.root_path("24.11")
    assert root == tmp_path / "24.11"
    assert not roots.healthy(root, "24.11")  # missing
    root.mkdir()
    (root / roots.STAMP).write_text("{not json")
    assert not roots.healthy(root, "24.11")
    stamp = {"stamp_version": roots.STAMP_VERSION, "release": "24.11", "packages": list(roots.ROOT_PACKAGES)}
    (root / roots.STAMP).write_text(json.dumps(stamp))
    assert not roots.healthy(root, "24.11")  # stamp fine, but no slurmctld inside
    assert not roots.healthy(root, "26.05")


def test_rebuilding_refuses_while_something_is_mounted_inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(roots, "mounts_under", lambda path: [f"{path}/proc"])
    (tmp_path / "r").mkdir()
    with pytest.raises(MiniclusterError, match="still mounted inside it"):
        roots._remove(tmp_path / "r")
    assert (tmp_path / "r").is_dir()


def test_wrappers_run_the_roots_client_in_the_callers_directory(tmp_path: Path) -> None:
    rt = RootRuntime(tmp_path / "root", "24.11", tmp_path / "state", tmp_path / "state" / "etc" / "slurm.conf")
    rt.write_wrappers()
    text = (rt.bin_dir / "sbatch").read_text()
    assert f"exec /usr/sbin/chroot {tmp_path / 'root'} /usr/bin/env -C \"$d\" SLURM_CONF={rt.conf_path} /usr/bin/sbatch" in text
    # inside a job step (the root's own path is not there) the wrapper runs the client itself
    assert f'[ -x {tmp_path / "root"}/usr/bin/sbatch ] || exec /usr/bin/sbatch "$@"' in text
    assert {p.name for p in rt.bin_dir.iterdir()} >= {"sbatch", "squeue", "scontrol", "scancel", "sinfo", "sacct"}


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the wrapper as another user")
def test_wrapper_tells_a_non_root_caller_how_to_run_it() -> None:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:  # pytest's tmp_path is private to root
        base = Path(d)
        base.chmod(0o755)
        rt = RootRuntime(base / "root", "26.05", base / "state", base / "state" / "etc" / "slurm.conf")
        rt.write_wrappers()
        client = base / "root" / "usr" / "bin" / "squeue"
        client.parent.mkdir(parents=True)
        client.write_text("#!/bin/sh\n")
        client.chmod(0o755)
        proc = subprocess.run(["runuser", "-u", "nobody", "--", "sh", str(rt.bin_dir / "squeue")],
                              capture_output=True, text=True, cwd="/")
    assert proc.returncode == 1
    assert "Slurm 26.05 runs inside" in proc.stderr and "chroot --userspec=USER" in proc.stderr

"""``hops-slurm site files DIR``: every site file copied out, one line each; an existing file kept unless
``--force``; a link planted where a file goes is replaced, never followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hops_slurm.bundled import bundled
from hops_slurm.cli import main

ROOT = Path(__file__).resolve().parents[3]


def test_files_copies_every_site_file_and_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "site"
    assert main(["site", "files", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    expected = {f"hooks/{p.name}" for p in (ROOT / "hooks").glob("*.lua") if p.name != "run_parser.lua"}
    expected |= {"etc/hops.toml", "etc/slurm.conf.d/hops.conf", "etc/grafana/hops-slurm.json"}
    expected |= {f"etc/{d}/{p.name}" for d in ("systemd", "cron") for p in (ROOT / "etc" / d).iterdir()}
    written = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert written == expected
    assert sorted(lines) == sorted(f"wrote {out / rel}" for rel in expected)
    assert (out / "hooks" / "job_submit.lua").read_bytes() == bundled("hooks", "job_submit.lua").read_bytes()
    assert main(["config", "check", str(out / "etc" / "hops.toml")]) == 0  # the template is a valid configuration

    (out / "etc" / "hops.toml").write_text("# the site's own\n")
    capsys.readouterr()
    assert main(["site", "files", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"kept {out / 'etc' / 'hops.toml'} (exists; --force replaces it)" in said and "wrote" not in said
    assert (out / "etc" / "hops.toml").read_text() == "# the site's own\n"

    assert main(["site", "files", str(out), "--force"]) == 0
    assert (out / "etc" / "hops.toml").read_bytes() == bundled("etc", "hops.toml").read_bytes()


def test_force_replaces_a_planted_link_and_leaves_its_target_alone(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("not to be overwritten\n")
    out = tmp_path / "site"
    (out / "hooks").mkdir(parents=True)
    os.symlink(victim, out / "hooks" / "job_submit.lua")
    assert main(["site", "files", str(out)]) == 0
    assert (out / "hooks" / "job_submit.lua").is_symlink()  # kept: it exists
    assert main(["site", "files", str(out), "--force"]) == 0
    assert not (out / "hooks" / "job_submit.lua").is_symlink()
    assert victim.read_text() == "not to be overwritten\n"

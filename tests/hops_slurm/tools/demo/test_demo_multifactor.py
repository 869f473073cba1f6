"""``hops-slurm demo --slurm-priority multifactor``: the Slurm half on an accounting cluster with
priority/multifactor and fair share, each job charged to its model family's account (issue 23)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

import hops_slurm.cli.demo_cmd as cli_demo
from hops_slurm.cli import main
from hops_slurm.tools.demo.multifactor import account_of, demo_spec, priority_settings
from hops_slurm.tools.demo.rigid import write_rigid_scripts
from hops_slurm.tools.demo.run import JOBS_DIR, ROOT, WORKLOAD, load_workload, run_demo
from hops_slurm.errors import ConfigError
from hops_slurm.tools.minicluster.conf import render_slurm_conf
from hops_slurm.tools.minicluster.spec import load_spec


def test_the_option_reaches_the_demo_and_backfill_stays_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(cli_demo, "run_demo", lambda out, spec, **kwargs: seen.update(kwargs) or 0)
    assert main(["demo"]) == 0 and seen["slurm_priority"] == "backfill"
    assert main(["demo", "--slurm-priority", "multifactor"]) == 0 and seen["slurm_priority"] == "multifactor"
    with pytest.raises(SystemExit):
        main(["demo", "--slurm-priority", "fifo"])


def test_make_passes_the_priority() -> None:
    out = subprocess.run(["make", "-n", "-C", str(ROOT), "demo", "SLURM_PRIORITY=multifactor"], capture_output=True,
                         text=True, check=True).stdout
    line = next(ln for ln in out.splitlines() if "hops-slurm demo" in ln)
    assert line.split()[-2:] == ["--slurm-priority", "multifactor"]


def test_multifactor_brings_up_an_accounting_cluster_with_fair_share() -> None:
    spec = load_spec(None)
    assert demo_spec(spec, "backfill") is spec and not spec.accounting
    mf = demo_spec(spec, "multifactor")
    assert mf.accounting and mf.multifactor and mf.ports == spec.ports and mf.state_dir == spec.state_dir
    conf = render_slurm_conf(mf, "host")
    settings = priority_settings(conf)
    assert "PriorityType=priority/multifactor" in settings
    assert any(s.startswith("PriorityDecayHalfLife=") for s in settings)
    assert any(s.startswith("PriorityWeightFairshare=") for s in settings)
    assert priority_settings(render_slurm_conf(spec, "host")) == []  # the default demo: Slurm's default priority
    with pytest.raises(ValueError, match="--slurm-priority must be one of backfill, multifactor"):
        demo_spec(spec, "fifo")


def test_hops_only_with_a_slurm_priority_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--slurm-priority applies to the Slurm half, which --hops-only leaves out"):
        run_demo(open(tmp_path / "out.txt", "w"), load_spec(None), hops_only=True, slurm_priority="multifactor")


@pytest.mark.parametrize(("name", "account"), [("gpt2-b", "gpt2"), ("resnet18-a", "resnet18"), ("vit", "vit"),
                                                ("Big-Model-x", "big_model"), ("a;b-c", "a_b"), ("-", "demo")])
def test_each_job_is_charged_to_its_model_familys_account(name: str, account: str) -> None:
    assert account_of(name) == account


def test_rigid_scripts_name_their_account(tmp_path: Path) -> None:
    rigid = write_rigid_scripts(load_workload(JOBS_DIR, WORKLOAD), tmp_path, max_per_node=8, account_of=account_of)
    for sub, job in rigid:
        lines = sub.script.read_text().splitlines()
        assert f"#SBATCH --account={account_of(job.name)}" in lines
    plain = write_rigid_scripts(load_workload(JOBS_DIR, WORKLOAD), tmp_path / "plain", max_per_node=8)
    assert not any("--account" in sub.script.read_text() for sub, _ in plain)
    assert len({account_of(job.name) for _, job in rigid}) >= 5  # several teams: fair share has something to rank

"""Pure: the slurm.conf lines a spec with ``enforce_limits`` and ``multifactor`` gets (issue 23)."""

from __future__ import annotations

import pytest

from hops_slurm.tools.minicluster import conf
from hops_slurm.tools.minicluster.spec import MiniclusterSpec, load_spec
from tests_paths import DATA


def test_enforce_and_multifactor_lines() -> None:
    spec = load_spec(DATA / "minicluster-governance.toml")
    lines = conf.render_slurm_conf(spec, "host1").splitlines()
    assert "AccountingStorageEnforce=associations,limits,qos" in lines
    assert "AccountingStorageTRES=gres/gpu,gres/gpu:a100" in lines  # per-type limits are counted (issue 33)
    assert "PriorityType=priority/multifactor" in lines
    assert any(line.startswith("PriorityDecayHalfLife=") for line in lines)
    plain = conf.render_slurm_conf(load_spec(DATA / "minicluster-accounting.toml"), "host1")
    assert "AccountingStorageEnforce" not in plain and "PriorityType" not in plain
    assert "AccountingStorageTRES=gres/gpu\n" in plain


def test_limits_without_accounting_are_refused_naming_the_fields() -> None:
    spec = load_spec(DATA / "minicluster-test.toml").model_dump()
    spec["enforce_limits"] = True
    with pytest.raises(ValueError, match="enforce_limits and multifactor need accounting = true"):
        MiniclusterSpec(**spec)

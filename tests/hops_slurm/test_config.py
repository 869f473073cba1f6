"""Site config: defaults match DESIGN.md, the sample file is valid, every error names its key path."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.config import SiteConfig, default_config_path, load_config, parse_config
from hops_slurm.errors import ConfigError


def test_defaults_are_the_design_values() -> None:
    cfg = SiteConfig()
    assert cfg.scheduler.round_length == 360
    assert cfg.scheduler.queue_refresh == 30
    assert cfg.scheduler.lambda_ == 1.0
    assert cfg.scheduler.sigma == 1.4
    assert cfg.solver.name == "CBC"
    assert cfg.solver.mip_gap == 0.01


def test_sample_file_is_valid_and_equals_defaults() -> None:
    assert load_config(default_config_path()) == SiteConfig()


def test_every_error_is_reported_with_its_key_path() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"scheduler": {"round_length": -5, "lamda": 2}, "solver": {"name": "gurobi"}, "paths": {"stor": "x"}})
    text = str(err.value)
    assert "4 problem(s)" in text
    for key in ("scheduler.round_length", "scheduler.lamda: unknown key", "solver.name", "paths.stor: unknown key"):
        assert key in text


def test_cross_field_rules_name_both_keys() -> None:
    with pytest.raises(ConfigError, match="solver.time_limit .* scheduler.round_length"):
        parse_config({"scheduler": {"round_length": 60}, "solver": {"time_limit": 90}})
    with pytest.raises(ConfigError, match="queue_refresh"):
        parse_config({"scheduler": {"round_length": 20, "queue_refresh": 30}, "solver": {"time_limit": 5}})


def test_lambda_key_is_spelled_as_in_the_paper() -> None:
    assert parse_config({"scheduler": {"lambda": 2}}).scheduler.lambda_ == 2


def test_broken_toml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "hops.toml"
    bad.write_text("[scheduler\nround_length = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "missing.toml")


def test_config_check_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check", str(default_config_path())]) == 0
    bad = tmp_path / "bad.toml"
    bad.write_text("[solver]\nmip_gap = 2\n")
    assert main(["config", "check", str(bad)]) == 1
    assert "solver.mip_gap" in capsys.readouterr().err

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


def test_every_accepted_key_is_read_somewhere() -> None:
    """No silent acceptance: each key of every section is used by code outside config.py."""
    import re

    root = Path(__file__).resolve().parents[2]
    sources = [p for d in ("hops_slurm", "profiler", "planner", "estimator") for p in (root / d).rglob("*.py")
               if p.name != "config.py"]
    text = "\n".join(p.read_text() for p in sources)
    unread = [f"{section}.{name}" for section, model in SiteConfig.model_fields.items()
              for name in model.annotation.model_fields  # type: ignore[union-attr]
              if not re.search(rf"\.{name}\b", text)]
    assert unread == []


@pytest.mark.parametrize("text", ["[scheduler]\nround_length = inf\n", "[scheduler]\nround_length = 1e308\n",
                                  "[scheduler]\nround_length = \"360\"\n", "[paths]\nstate_dir = \"rel\"\n",
                                  "[paths]\nstate_dir = \"\"\n", "[solver]\ntime_limit = 0\n"])
def test_config_rejects_non_finite_absurd_coerced_and_relative(tmp_path: Path, text: str) -> None:
    p = tmp_path / "c.toml"
    p.write_text(text)
    with pytest.raises(ConfigError):
        load_config(p)


def test_config_rejects_world_writable_state_dir(tmp_path: Path) -> None:
    d = tmp_path / "state"
    d.mkdir()
    d.chmod(0o777)
    with pytest.raises(ConfigError, match="world-writable"):
        parse_config({"paths": {"state_dir": str(d)}})
    d.chmod(0o755)
    assert parse_config({"paths": {"state_dir": str(d)}}).paths.state_dir == d

"""Site config: defaults match docs/design.md, the sample file is valid, every error names its key path."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.bundled import sample_config
from hops_slurm.cli import main
from hops_slurm.config import SiteConfig, load_config, parse_config
from hops_slurm.errors import ConfigError
from planner.params import PlannerParams


def test_defaults_are_the_design_values() -> None:
    cfg = SiteConfig()
    assert cfg.scheduler.round_length == 360
    assert cfg.scheduler.queue_refresh == 30
    assert cfg.planner == PlannerParams()  # one set of planner defaults: the simulator's and the daemon's


def test_planner_section_is_the_planner_params_with_their_checks() -> None:
    cfg = parse_config({"planner": {"priority": "ftf", "lambda": 3, "solver": "HiGHS", "gap": 0.05,
                                    "restart_penalty": 0.1, "pin_running": False, "node_limit": 500}})
    assert cfg.planner == PlannerParams(priority="ftf", lambda_=3.0, solver="HiGHS", gap=0.05, restart_penalty=0.1,
                                        pin_running=False, node_limit=500)
    with pytest.raises(ConfigError) as err:
        parse_config({"planner": {"sigma": 0, "restart_penalty": 1.0, "priority": "random", "node_limit": 2.5,
                                  "pin_running": 1, "speed": 2}})
    text = str(err.value)
    assert "6 problem(s)" in text
    for line in ("planner.sigma: must be a number in (0, 100]", "planner.restart_penalty: must be a number in [0, 1)",
                 "planner.priority: must be one of lr, ftf", "planner.node_limit: Input should be a valid integer",
                 "planner.pin_running: Input should be a valid boolean", "planner.speed: unknown key"):
        assert line in text


def test_keys_of_earlier_releases_say_where_they_went() -> None:
    for data in ({"solver": {"mip_gap": 0.01}}, {"scheduler": {"sigma": 1.4}}):
        with pytest.raises(ConfigError, match=r"moved to \[planner\]"):
            parse_config(data)


def test_sample_file_is_valid_and_equals_defaults() -> None:
    assert load_config(sample_config()) == SiteConfig()


def test_every_error_is_reported_with_its_key_path() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"scheduler": {"round_length": -5, "lamda": 2}, "planner": {"solver": "gurobi"}, "paths": {"stor": "x"}})
    text = str(err.value)
    assert "4 problem(s)" in text
    for key in ("scheduler.round_length", "scheduler.lamda: unknown key", "planner.solver", "paths.stor: unknown key"):
        assert key in text


def test_cross_field_rules_name_both_keys() -> None:
    with pytest.raises(ConfigError, match="planner.time_limit .* scheduler.round_length"):
        parse_config({"scheduler": {"round_length": 60}, "planner": {"time_limit": 90}})
    with pytest.raises(ConfigError, match="queue_refresh"):
        parse_config({"scheduler": {"round_length": 20, "queue_refresh": 30}, "planner": {"time_limit": 5}})


def test_lambda_key_is_spelled_as_in_the_paper() -> None:
    assert parse_config({"planner": {"lambda": 2}}).planner.lambda_ == 2


def test_broken_toml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "hops.toml"
    bad.write_text("[scheduler\nround_length = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "missing.toml")


def test_config_check_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check", str(sample_config())]) == 0
    bad = tmp_path / "bad.toml"
    bad.write_text("[planner]\ngap = 2\n")
    assert main(["config", "check", str(bad)]) == 1
    assert "planner.gap" in capsys.readouterr().err


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
                                  "[paths]\nstate_dir = \"\"\n", "[planner]\ntime_limit = 0\n"])
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


def test_the_planner_defaults_are_documented_once_and_right() -> None:
    """docs/design.md, "Planner parameters": one row per key, with the default the code has."""
    import dataclasses
    import re

    from planner.params import setting_key

    text = (Path(__file__).resolve().parents[2] / "docs" / "design.md").read_text()
    table = text.split("## Planner parameters", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+?) \|", table, flags=re.M))

    def shown(v: object) -> str:
        if v is None:
            return "unset"
        if isinstance(v, bool):
            return str(v).lower()
        return f"`{v}`" if isinstance(v, str) else f"{v:g}"

    assert rows == {setting_key(f.name): shown(f.default) for f in dataclasses.fields(PlannerParams)}


@pytest.mark.parametrize(("paths", "engine", "needle"), [
    ({"store": "/etc/passwd"}, {}, "paths.store (/etc/passwd) is in the system directory /etc"),
    ({"journal": "/srv/elsewhere/j.sqlite"}, {}, "paths.journal (/srv/elsewhere/j.sqlite) is outside paths.state_dir"),
    ({"state_dir": "/etc/hops"}, {}, "paths.state_dir (/etc/hops) is in the system directory /etc"),
    ({"state_dir": "/var/../usr/lib/hops"}, {}, "is in the system directory /usr"),
    ({"state_dir": "/"}, {}, "paths.state_dir (/) is the file system root"),
    ({"allowed_roots": ["/boot"]}, {}, "paths.allowed_roots.0 (/boot) is in the system directory /boot"),
    ({}, {"env_dir": "/etc/cron.d"}, "engine.env_dir (/etc/cron.d) is in the system directory /etc"),
    ({}, {"probe_dir": "/opt/probes"}, "engine.probe_dir (/opt/probes) is outside paths.state_dir"),
])
def test_every_path_key_stays_under_the_state_dir_or_an_allowed_root(paths: dict[str, object], engine: dict[str, object],
                                                                   needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"paths": paths, "engine": engine})
    assert needle in str(err.value)


def test_an_allowed_root_admits_absolute_paths_and_a_link_into_the_system_is_seen(tmp_path: Path) -> None:
    cfg = parse_config({"paths": {"state_dir": str(tmp_path / "state"), "records": "/srv/hops/records.sqlite",
                                  "allowed_roots": ["/srv/hops"]}})
    assert cfg.paths.resolve(cfg.paths.records) == Path("/srv/hops/records.sqlite")
    state = tmp_path / "state"
    state.mkdir()
    (state / "link").symlink_to("/etc")
    with pytest.raises(ConfigError, match=r"paths.store \(.*/state/link/passwd\) is in the system directory /etc"):
        parse_config({"paths": {"state_dir": str(state), "store": "link/passwd"}})


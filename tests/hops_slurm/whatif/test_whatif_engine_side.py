"""``hops-slurm whatif`` with its defaults, as a site runs it first: the Hops side is the production engine
as the daemon runs it (probes in place, the configuration's round, refresh and monitor step), every
assumption is printed with its mark, durations print as ``hops-slurm report``'s, the cluster comes from
the export's node lists and typed GRES, and a verdict says whether Hops is ahead on avg JCT and, when it
is not, why. Simulated time only: nothing here compares wall-clock times."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.whatif.disclosure import MARKS
from tests_paths import DATA

SACCT = DATA / "sacct"
HEAD = "JobID|JobName|User|Partition|State|Submit|Start|End|Timelimit|AllocTRES|ReqTRES|AdminComment|NodeList"
ASSUMPTION = re.compile(r"^  \[(\w+)\] ([^:]+): ")


def _row(job: int, submit: str, start: str, end: str, tres: str, nodes: str, user: str = "ann") -> str:
    return f"{job}|j{job}|{user}|gpu|COMPLETED|{submit}|{start}|{end}|00:10:00|{tres}|{tres}||{nodes}"


def _export(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "history.txt"
    path.write_text("\n".join([HEAD, *rows]) + "\n")
    return path


def _stated(err: str) -> dict[str, list[tuple[str, str]]]:
    """topic -> [(mark, line)] of the printed assumptions."""
    out: dict[str, list[tuple[str, str]]] = {}
    for line in err.splitlines():
        m = ASSUMPTION.match(line)
        if m:
            out.setdefault(m.group(2), []).append((m.group(1), line))
    return out


@pytest.fixture(autouse=True)
def _no_site_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented defaults, whatever the machine running the tests has configured."""
    monkeypatch.delenv("HOPS_CONFIG", raising=False)
    monkeypatch.setattr("hops_slurm.cli.whatif_cmd.SYSTEM_CONFIG", Path("/nonexistent/hops.toml"))


def test_every_assumption_is_printed_with_its_mark(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", str(SACCT / "22.05" / "sacct.json")]) == 0
    err = capsys.readouterr().err
    stated = _stated(err)
    marks = {mark for lines in stated.values() for mark, _line in lines}
    assert marks <= set(MARKS) and {"export", "config", "measured", "guessed"} <= marks
    assert "assumptions (" in err
    # the cluster: nodes read from the export, their sizes guessed
    assert stated["cluster nodes"][0][0] == "export" and "(g1, g2)" in stated["cluster nodes"][0][1]
    assert stated["GPUs per node"][0][0] == "guessed"
    # what the export cannot say is marked guessed: the model of a job without #HOPS, restart costs, probes
    assert stated["model identity"][0][0] == "guessed" and "ResNet-50" in stated["model identity"][0][1]
    assert stated["restart costs"][0][0] == "guessed"
    assert stated["probe jobs"][0][0] == "guessed"
    assert stated["throughput per GPU type"][0][0] == "measured"
    # the Hops side: the configuration's defaults, said so
    assert stated["configuration"][0][0] == "config" and "documented defaults" in stated["configuration"][0][1]
    timing = stated["timing"][0]
    assert timing[0] == "config" and "round 00:06:00, queue refresh 00:00:30, monitor step 00:00:05" in timing[1]
    assert stated["probes"][0][1].split(": ", 1)[1].startswith("in place")


def test_json_carries_the_assumptions_and_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", str(SACCT / "24.11" / "sacct.json"), "--json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["assumptions"] and {a["mark"] for a in meta["assumptions"]} <= set(MARKS)
    assert meta["round_seconds"] == 360 and meta["monitor_seconds"] == 5 and meta["config"] == "defaults"
    verdict = meta["verdict"]
    assert verdict["hops"] == "hops" and verdict["slurm"] == "slurm-backfill"
    assert isinstance(verdict["ahead"], bool) and (verdict["ahead"] or verdict["reasons"])


def test_durations_print_as_report_does_never_in_decimal_hours(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "w"
    assert main(["whatif", str(SACCT / "26.05" / "sacct.json"), "--out", str(out)]) == 0
    std = capsys.readouterr()
    md = (out / "results.md").read_text()
    for text in (std.out, std.err, md):
        assert not re.search(r"\d\.\d+ ?h\b|\(h\)", text), text
    assert re.search(r"\| slurm-recorded \| 12 \| 12 \| 00:01:2\d \|", md), md  # HH:MM:SS, as `report`
    assert "Assumptions" in md and "[guessed]" in md


def test_the_cluster_comes_from_the_node_lists_and_typed_gres(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = _export(tmp_path, [
        _row(1, "2026-01-01T10:00:00", "2026-01-01T10:00:00", "2026-01-01T10:20:00", "gres/gpu:p100=2,node=1", "pa"),
        _row(2, "2026-01-01T10:00:00", "2026-01-01T10:00:00", "2026-01-01T10:30:00", "gres/gpu:v100=4,node=1", "va"),
        _row(3, "2026-01-01T10:01:00", "2026-01-01T10:20:00", "2026-01-01T10:40:00", "gres/gpu:p100=1,node=1", "pa"),
        _row(4, "2026-01-01T10:01:00", "2026-01-01T10:01:00", "2026-01-01T10:21:00", "gres/gpu:v100=8,node=2", "vb,vc"),
    ])
    out = tmp_path / "w"
    assert main(["whatif", str(export), "--out", str(out), "--policies", "slurm-backfill"]) == 0
    err = capsys.readouterr().err
    cluster = (out / "cluster.toml").read_text()
    # pa: 2 p100 (the most its jobs held at once); va: 4 v100; vb and vc: 4 v100 each (8 over 2 nodes)
    kinds = re.findall(r'gpu_type = "(\w+)"\ngpus = (\d+)\ncount = (\d+)', cluster)
    assert sorted(kinds) == [("p100", "2", "1"), ("v100", "4", "3")]
    stated = _stated(err)
    assert "4 nodes named by the jobs' node lists (pa, va, vb, vc)" in stated["cluster nodes"][0][1]
    types = dict(stated["GPU types"])
    assert "p100, v100 from the jobs' typed GRES" in types["export"]


def test_a_gpu_type_without_measurements_is_a_guess(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = _export(tmp_path, [
        _row(1, "2026-01-01T10:00:00", "2026-01-01T10:00:00", "2026-01-01T10:20:00", "gres/gpu:a100=2,node=1", "n1"),
    ])
    assert main(["whatif", str(export), "--policies", "slurm-backfill"]) == 0
    types = dict(_stated(capsys.readouterr().err)["GPU types"])
    assert "a100" in types["guessed"] and "replayed as v100" in types["guessed"]


def _hops_jobs(out: Path) -> dict[str, dict[str, object]]:
    return {r["job_id"]: r for r in map(json.loads, (out / "hops" / "jobs.jsonl").read_text().splitlines())}


def test_the_default_hops_side_probes_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On an idle cluster the first job of a model Hops has never measured starts at the engine's next
    monitor step: no probe is charged before it (a probe runs 60 s on the replay's profiler)."""
    export = _export(tmp_path, [
        _row(1, "2026-01-01T10:00:00", "2026-01-01T10:00:00", "2026-01-01T10:20:00", "gres/gpu=2,node=1", "n1"),
        _row(2, "2026-01-01T10:00:07", "2026-01-01T10:00:07", "2026-01-01T10:10:00", "gres/gpu=1,node=1", "n1", "bob"),
    ])
    out = tmp_path / "w"
    assert main(["whatif", str(export), "--out", str(out), "--policies", "slurm-backfill,hops"]) == 0
    capsys.readouterr()
    jobs = _hops_jobs(out)
    assert set(jobs) == {"1", "2"}  # the export's ids
    for job in jobs.values():  # each the first job of its (user, model): new to Hops
        assert float(job["start"]) - float(job["submit"]) <= 5.0  # at most one monitor step, never a probe


def test_a_site_that_probes_first_says_so_and_its_jobs_wait_for_probes(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "hops.toml"
    config.write_text("[scheduler]\nround_length = 120\nqueue_refresh = 20\n[engine]\nprobe_in_place = false\n"
                      f"[paths]\nstate_dir = \"{tmp_path / 'state'}\"\n")
    export = _export(tmp_path, [
        _row(1, "2026-01-01T10:00:00", "2026-01-01T10:00:00", "2026-01-01T10:20:00", "gres/gpu=2,node=1", "n1"),
    ])
    out = tmp_path / "w"
    assert main(["whatif", str(export), "--config", str(config), "--out", str(out), "--policies", "slurm-backfill,hops"]) == 0
    stated = _stated(capsys.readouterr().err)
    assert f"--config {config}" in stated["configuration"][0][1]
    assert "round 00:02:00, queue refresh 00:00:20" in stated["timing"][0][1]
    assert "probed before it is planned" in stated["probes"][0][1]
    job = _hops_jobs(out)["1"]
    assert float(job["start"]) - float(job["submit"]) >= 60.0  # its probe ran first


def test_hops_config_env_is_the_daemons_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "site.toml"
    config.write_text(f"[engine]\nmonitor_interval = 2.0\n[paths]\nstate_dir = \"{tmp_path / 'state'}\"\n")
    monkeypatch.setenv("HOPS_CONFIG", str(config))
    assert main(["whatif", str(SACCT / "22.05" / "sacct.json"), "--policies", "slurm-backfill"]) == 0
    stated = _stated(capsys.readouterr().err)
    assert f"$HOPS_CONFIG ({config})" in stated["configuration"][0][1]
    assert "monitor step 00:00:02" in stated["timing"][0][1]


def test_when_hops_is_not_ahead_the_output_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rigid one-GPU jobs, one at a time on an idle cluster: nothing for Hops to win, and the engine sees
    each arrival at its monitor step while Slurm starts it at once."""
    rows = [_row(i, f"2026-01-01T10:{2 * i:02d}:01", f"2026-01-01T10:{2 * i:02d}:01", f"2026-01-01T10:{2 * i:02d}:31",
                 "gres/gpu=1,node=1", "n1") for i in range(1, 9)]
    assert main(["whatif", str(_export(tmp_path, rows)), "--policies", "slurm-backfill,hops"]) == 0
    err = capsys.readouterr().err
    assert "hops is not ahead of slurm-backfill on avg JCT" in err
    assert "the jobs are rigid: 8 of 8" in err
    assert "the cluster was mostly idle" in err
    assert "monitor step" in err.split("is not ahead", 1)[1]


def test_the_documented_defaults_are_etc_hops_toml() -> None:
    """Without a site configuration the Hops side runs with the built-in defaults; they are the values
    etc/hops.toml documents (the sample a site starts from), in every setting the replay uses."""
    from hops_slurm.config import load_config, parse_config
    from hops_slurm.sim.engine_run import SITE_ENGINE_KEYS
    sample, defaults = load_config(DATA.parents[1] / "etc" / "hops.toml"), parse_config({}, "defaults")
    assert sample.scheduler == defaults.scheduler
    assert sample.planner == defaults.planner and sample.honesty == defaults.honesty
    assert {k: getattr(sample.engine, k) for k in SITE_ENGINE_KEYS} == {k: getattr(defaults.engine, k) for k in SITE_ENGINE_KEYS}

"""The metrics exporter (no cluster): names, the dashboard's queries, journal counting, separate registries."""

from __future__ import annotations

import json
import math
import re
import sqlite3
import urllib.request
from pathlib import Path

import pytest

from hops_slurm.bundled import bundled
from hops_slurm.config import parse_config
from hops_slurm.engine.exporter import EngineMetrics, exported_names, serve
from hops_slurm.errors import ConfigError
from hops_slurm.journal import Journal

DASHBOARD = bundled("etc", "grafana", "hops-slurm.json")
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
                "offset", "inf", "nan"}


def promql_metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression: identifiers that are not functions, keywords, label names
    (inside ``{}`` or ``by (...)``) or inside ``[...]`` ranges and strings."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        rest = text[m.end():].lstrip()
        if rest.startswith("(") or m.group().lower() in PROMQL_WORDS:
            continue
        names.add(m.group())
    return names


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    exprs += [v["query"] for v in dash["templating"]["list"] if v.get("type") == "query"]
    return exprs


def test_promql_parser_finds_names_and_skips_functions_labels_and_ranges() -> None:
    expr = 'histogram_quantile(0.95, sum by (le, kind) (rate(hops_x_bucket{job=~"a"}[5m]))) / hops_y + time()'
    assert promql_metric_names(expr) == {"hops_x_bucket", "hops_y"}
    assert promql_metric_names('time() - hops_a{kind="round"} > bool 3') == {"hops_a"}


def test_dashboard_loads_and_queries_only_metrics_the_daemon_exports() -> None:
    names = exported_names(EngineMetrics().registry)
    exprs = dashboard_exprs()
    assert len(exprs) >= 10
    used: set[str] = set()
    for expr in exprs:
        found = promql_metric_names(expr.replace("label_values(", "(").replace(", job)", ")"))
        assert found, expr
        assert found <= names, f"{expr}: {sorted(found - names)} not exported"
        used |= found
    # the dashboard shows every metric family the exporter defines
    families = {f.name for f in EngineMetrics().registry.collect()}
    assert {n for n in families if not any(u.startswith(n) for u in used)} == set()


def test_names_follow_prometheus_conventions() -> None:
    for family in EngineMetrics().registry.collect():
        assert family.name.startswith("hops_"), family.name
        assert re.fullmatch(r"[a-z_]+", family.name), family.name
        if family.type == "histogram" and "latency_ratio" not in family.name:
            assert family.name.endswith("_seconds"), family.name
        assert not family.name.endswith("_total")  # the client adds it to counters


def test_each_engine_has_its_own_registry() -> None:
    a, b = EngineMetrics(), EngineMetrics()
    a.step_failed("round")
    assert a.registry.get_sample_value("hops_step_failures_total", {"step": "round"}) == 1
    assert b.registry.get_sample_value("hops_step_failures_total", {"step": "round"}) is None


def test_journal_actions_are_counted_once_and_open_ones_later() -> None:
    journal = Journal(":memory:")
    m = EngineMetrics()
    for kind in ("hold", "hold", "release", "requeuehold", "place"):
        with journal.action(kind, "1"):
            pass
    with pytest.raises(RuntimeError):
        with journal.action("release", "2"):
            raise RuntimeError("scontrol refused")
    still_open = journal.intend("hold", "3")
    with journal.action("release", "4"):
        pass
    m.journal(journal)
    m.journal(journal)  # nothing counted twice
    value = m.registry.get_sample_value
    assert value("hops_holds_total") == 2 and value("hops_releases_total") == 1
    assert value("hops_preemptions_total") == 1
    assert value("hops_enactment_errors_total", {"reason": "action_failed"}) == 1
    journal.finish(still_open)
    m.journal(journal)
    assert value("hops_holds_total") == 3 and value("hops_releases_total") == 2


def test_store_size_and_raqlr_from_ended_jobs(tmp_path: Path) -> None:
    from hops_slurm.records import JobRecord

    store = tmp_path / "store.sqlite"
    store.write_bytes(b"x" * 1000)
    m = EngineMetrics(raqlr_window=100.0)
    # waited 50 s for an age of 100 s: LR 0.5; the other ended before the window
    done = JobRecord(job_id="1", submit=1000.0, start=1050.0, end=1100.0, state="COMPLETED", age_estimate=100.0)
    old = JobRecord(job_id="2", submit=0.0, start=500.0, end=900.0, state="COMPLETED", age_estimate=100.0)
    m.refresh([], [done, old], 1150.0, store, None)
    assert m.registry.get_sample_value("hops_store_size_bytes") == 1000
    assert m.registry.get_sample_value("hops_raqlr") == pytest.approx(0.5)
    m.refresh([], [], 5000.0, store, None)
    assert math.isnan(m.registry.get_sample_value("hops_raqlr"))


def test_served_on_loopback(tmp_path: Path) -> None:
    m = EngineMetrics()
    m.step_failed("refresh")
    server = serve(m, "127.0.0.1", 0)
    try:
        port = server.server_address[1]
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    finally:
        server.shutdown()
        server.server_close()
    assert 'hops_step_failures_total{step="refresh"} 1.0' in text
    assert "python_gc" not in text  # not the process-global registry


@pytest.mark.parametrize("section", [{"port": "9480"}, {"port": 70000}, {"port": -1}, {"address": "localhost"},
                                     {"address": "0.0.0.0; rm"}, {"address": 127}, {"raqlr_window": 1.0},
                                     {"listen": ":9480"}])
def test_metrics_config_is_strict(section: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="metrics"):
        parse_config({"metrics": section})


def test_metrics_config_defaults_off_on_loopback() -> None:
    cfg = parse_config({})
    assert cfg.metrics.port == 0 and cfg.metrics.address == "127.0.0.1"
    assert parse_config({"metrics": {"port": 9480, "address": "::1"}}).metrics.address == "::1"


def test_journal_counting_starts_where_told() -> None:
    journal = Journal(":memory:")
    with journal.action("hold", "1"):
        pass
    m = EngineMetrics()
    m.count_journal_from(journal.last_id())
    with journal.action("hold", "2"):
        pass
    m.journal(journal)
    assert m.registry.get_sample_value("hops_holds_total") == 1


def test_a_planning_sets_durations_queue_and_enactment_values() -> None:
    from hops_slurm.core.interface import Planning
    from hops_slurm.records import RoundRecord
    from hops_slurm.slurm.enact import EnactResult
    from planner.views import JobView, Plan

    def job(job_id: str, wait: float, age: float, current: dict[str, int] | None) -> JobView:
        return JobView(job_id=job_id, requirements=(1, 2), submit_time=0.0, wait=wait, age=age, sensitivity=1.0,
                       throughput=lambda c: 1.0, current=current)

    jobs = (job("1", 30.0, 10.0, None), job("2", 5.0, 0.0, None), job("3", 0.0, 10.0, {"n1": 2}))
    plan = Plan({"1": None, "2": None, "3": {"n1": 2}},
                {"window": ["1", "2", "3"], "gap": 0.004, "solve_time": 0.25, "fallback": None})
    record = RoundRecord(time=1000.0, active_jobs=3, unassigned_jobs=2, idle_gpus_after=2, gpus_in_use=2,
                         total_gpus=4, solve_seconds=0.3, preempted_by={"requeued": 2, "moved-type": 1})
    m = EngineMetrics()
    m.planning(Planning(plan, jobs, None, record, read_seconds=0.5, plan_seconds=0.3, enact_seconds=1.0), False,
               EnactResult(refused={"1": "node down"}))
    v = m.registry.get_sample_value
    assert v("hops_planning_duration_seconds_sum", {"kind": "round"}) == pytest.approx(1.8)
    assert v("hops_planning_phase_duration_seconds_sum", {"kind": "round", "phase": "enact"}) == 1.0
    assert v("hops_solver_duration_seconds_sum", {"kind": "round"}) == 0.25
    assert v("hops_solver_gap_ratio", {"kind": "round"}) == 0.004
    assert v("hops_queue_length") == 2 and v("hops_window_jobs") == 3 and v("hops_active_jobs") == 3
    assert v("hops_queued_latency_ratio_count") == 1  # job 2 has no age yet: no ratio
    assert v("hops_queued_latency_ratio_bucket", {"le": "2.0"}) == 0 and v("hops_queued_latency_ratio_bucket", {"le": "5.0"}) == 1
    assert v("hops_fragmented_gpus") == 2 and v("hops_gpus", {"state": "idle"}) == 2
    assert v("hops_enactment_errors_total", {"reason": "refused"}) == 1
    assert v("hops_preemption_causes_total", {"cause": "requeued"}) == 2
    assert v("hops_preemption_causes_total", {"cause": "moved-type"}) == 1
    # a fragment plan leaves the round's queue values alone
    frag = RoundRecord(time=1010.0, plan_index=1, active_jobs=1, unassigned_jobs=0, idle_gpus_after=0,
                       gpus_in_use=4, total_gpus=4, fallback="greedy")  # as plan_once copies it from the plan
    m.planning(Planning(Plan({"1": {"n2": 2}}, {"fallback": "greedy"}), jobs[:1], None, frag), True, None)
    assert v("hops_queue_length") == 2 and v("hops_fragmented_gpus") == 0
    assert math.isnan(v("hops_solver_gap_ratio", {"kind": "fragment"}))
    assert v("hops_solver_fallbacks_total", {"kind": "fragment", "fallback": "greedy"}) == 1


def test_the_store_signatures_are_counted_again_when_the_store_changed(tmp_path: Path) -> None:
    """The count is kept while the store is unchanged, and follows the engine's own writes and another
    process's (``hops-slurm calibrate``, an administrator)."""
    from estimator.store import ThroughputStore

    path = tmp_path / "store.sqlite"
    store = ThroughputStore(path)
    other = sqlite3.connect(path)  # another process (the store's writer lock is the engine's)
    m = EngineMetrics()

    def count() -> float | None:
        m.refresh([], [], 0.0, path, store)
        return m.registry.get_sample_value("hops_store_signatures")

    try:
        assert count() == 0
        store.put_theory("u/a", "a100", t_f=0.1, t_b=0.2, t_u=0.01, pattern=1, params=1e6, batch_size=8)
        assert count() == 1
        asked: list[int] = []
        real = store.signatures
        store.signatures = lambda: asked.append(1) or real()  # type: ignore[method-assign]
        assert count() == 1 and asked == []  # unchanged: not asked again
        with other:
            other.execute("INSERT INTO theory VALUES ('u/b', 'a100', 0.1, 0.2, 0.01, 1, 1e6, 8)")
        assert count() == 2 and asked == [1]
    finally:
        store.close()
        other.close()


def step_labels(metrics: EngineMetrics, cycle: str) -> list[str]:
    """The ``step`` labels the exporter exposes under ``cycle`` (series that exist before any observation)."""
    steps = []
    for family in metrics.registry.collect():
        if family.name == "hops_engine_step_duration_seconds":
            steps += [s.labels["step"] for s in family.samples
                      if s.name.endswith("_count") and s.labels["cycle"] == cycle]
    return steps


def test_every_plan_stage_is_exported_and_timed_by_name() -> None:
    from planner.hops import PLAN_STAGES, HopsPolicy
    from planner.stages import stage_names
    from planner.views import ClusterView, JobView, NodeView

    metrics = EngineMetrics()
    assert step_labels(metrics, "plan") == list(stage_names(PLAN_STAGES))  # every series from the start
    policy = HopsPolicy(timer=metrics.timer("plan"))
    job = JobView("j", (2,), 0.0, 1.0, 10.0, 1.2, lambda cfg: float(sum(cfg.values())))
    policy.plan(ClusterView((NodeView("n0", "v100", "v100-a", 8, 8),)), (job,), now=0.0)
    counts = {s.labels["step"]: s.value for f in metrics.registry.collect() if f.name == "hops_engine_step_duration_seconds"
              for s in f.samples if s.name.endswith("_count") and s.labels["cycle"] == "plan"}
    assert counts == {name: 1.0 for name in stage_names(PLAN_STAGES)}


def test_every_enact_phase_is_exported_and_timed_by_name() -> None:
    from hops_slurm.slurm.enact import ENACT_PHASES

    metrics = EngineMetrics()
    assert step_labels(metrics, "enact") == list(ENACT_PHASES)
    timer = metrics.timer("enact")
    with pytest.raises(RuntimeError), timer.stage("release"):  # timed also when the phase fails
        raise RuntimeError("scontrol release failed")
    counts = {s.labels["step"]: s.value for f in metrics.registry.collect() if f.name == "hops_engine_step_duration_seconds"
              for s in f.samples if s.name.endswith("_count") and s.labels["cycle"] == "enact"}
    assert counts == {name: 1.0 if name == "release" else 0.0 for name in ENACT_PHASES}


def test_the_dashboard_graphs_each_staged_cycle() -> None:
    from hops_slurm.engine.exporter import STAGED

    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert set(STAGED) == {"plan", "enact"}
    for cycle in STAGED:
        assert any("hops_engine_step_duration_seconds" in e and f'cycle="{cycle}"' in e for e in exprs), cycle


def test_the_admin_guide_names_every_staged_step() -> None:
    from hops_slurm.engine.exporter import STAGED

    guide = (Path(__file__).resolve().parents[3] / "docs" / "admin-guide.md").read_text()
    row = next(line for line in guide.splitlines() if line.startswith("| `hops_engine_step_duration_seconds"))
    for cycle, names in STAGED.items():
        listed = row.split(f"`{cycle}` (", 1)[1].split(")", 1)[0]  # the cycle's parenthesis in the metrics table
        assert [n for n in re.findall(r"`(\w+)`", listed) if n not in ("PLAN_STAGES", "ENACT_PHASES")] == list(names)

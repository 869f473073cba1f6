"""The daemon's Prometheus endpoint on the live minicluster: scraped while the daemon runs, its values
checked against what the engine recorded (round records in ``records.sqlite``, finished actions in
``journal.sqlite``) over the same stretch of time."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hops_slurm.engine import refresh
from hops_slurm.records import RoundRecord
from planner.hops import PLAN_STAGES
from planner.stages import stage_names

pytestmark = pytest.mark.slurm


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rounds(state_dir: Path, skip: int) -> list[RoundRecord]:
    path = state_dir / "records.sqlite"
    if not path.exists():
        return []
    with sqlite3.connect(path) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "round_records" not in tables:
            return []
        rows = con.execute("SELECT record FROM round_records ORDER BY rowid").fetchall()
    return [RoundRecord.model_validate_json(text) for (text,) in rows[skip:]]


def _journal(state_dir: Path, after: int) -> dict[str, int]:
    path = state_dir / "journal.sqlite"
    if not path.exists():
        return {}
    with sqlite3.connect(path) as con:
        rows = con.execute("SELECT kind, count(*) FROM actions WHERE id > ? AND status = 'done' GROUP BY kind",
                           (after,)).fetchall()
    return dict(rows)


def _journal_last(state_dir: Path) -> int:
    path = state_dir / "journal.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as con:
        return int(con.execute("SELECT coalesce(max(id), 0) FROM actions").fetchone()[0])


def _scrape(port: int) -> tuple[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    values = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            values[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return text, values


def _steps(values: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> dict[tuple[str, str], float]:
    """(cycle, step) -> how often the step ran, from ``hops_engine_step_duration_seconds_count``."""
    return {(dict(k)["cycle"], dict(k)["step"]): n for (name, k), n in values.items()
            if name == "hops_engine_step_duration_seconds_count"}


def _between_steps(steps: dict[tuple[str, str], float], plannings: int) -> bool:
    """Every refresh step as often as the refresh's first, every planning timed in all its parts."""
    first = steps.get(("refresh", "read"), 0.0)
    return all(steps.get(("refresh", name), 0.0) == first for name in refresh.CYCLE.names) and \
        all(steps.get(("planning", part), 0.0) == plannings for part in ("plan", "enact", "record", "views"))


def test_metrics_endpoint_agrees_with_round_records_and_journal(eng) -> None:  # noqa: ANN001
    port = _free_port()
    with eng.config.open("a") as fh:
        fh.write(f"\n[metrics]\nport = {port}\naddress = \"127.0.0.1\"\n")
    rounds_before = len(_rounds(eng.state_dir, 0))
    journal_before = _journal_last(eng.state_dir)
    jobs = [eng.submit(gpus="1,2,4"), eng.submit(gpus="2,4")]
    daemon = eng.daemon()
    eng.wait(lambda: all(eng.jobs()[j].state == "RUNNING" for j in jobs), timeout=120,
             what=f"jobs {jobs} started by the daemon\n{eng.describe()}")
    # the records and the endpoint are written by one step after the other: take a scrape between two
    # identical reads of the records, so that nothing happened between them
    deadline = time.monotonic() + 90
    tries = []
    while True:
        assert daemon.poll() is None, eng.output(daemon)[-3000:]
        rounds, actions = _rounds(eng.state_dir, rounds_before), _journal(eng.state_dir, journal_before)
        text, v = _scrape(port)
        same = (len(_rounds(eng.state_dir, rounds_before)) == len(rounds)
                and _journal(eng.state_dir, journal_before) == actions)
        main = [r for r in rounds if r.plan_index == 0]
        got = (v.get(("hops_planning_duration_seconds_count", (("kind", "round"),))),
               v.get(("hops_planning_duration_seconds_count", (("kind", "fragment"),))),
               v.get(("hops_holds_total", ())), v.get(("hops_releases_total", ())),
               v.get(("hops_preemptions_total", ())))
        want = (len(main), len(rounds) - len(main), actions.get("hold", 0), actions.get("release", 0),
                actions.get("requeuehold", 0))
        queued = v.get(("hops_queue_length", ()))
        # a round plan (not only the refresh ticks' fragment plans, which may start both jobs first), and
        # the scrape between two steps of the cycle (no refresh half-way, every planning recorded)
        if same and main and got == tuple(float(x) for x in want) and queued == 0 and _between_steps(_steps(v), len(rounds)):
            break
        tries.append(f"scrape {got} records {want} same={same} queue {queued}")
        assert time.monotonic() < deadline, "endpoint never agreed with the records:\n" + "\n".join(tries[-5:])
        time.sleep(0.5)
    assert len(main) >= 1 and actions.get("release", 0) >= 2 and actions.get("hold", 0) >= 2
    last_main, last = main[-1], rounds[-1]
    assert v[("hops_active_jobs", ())] == last_main.active_jobs
    assert v[("hops_gpus", (("state", "in_use"),))] == last.gpus_in_use
    assert v[("hops_gpus", (("state", "idle"),))] == last.idle_gpus_after
    assert v[("hops_fragmented_gpus", ())] == last.fragments
    # each phase observed once per planning; the duration sums agree with the phases
    for kind, n in (("round", len(main)), ("fragment", len(rounds) - len(main))):
        for phase in ("read", "plan", "enact"):
            assert v[("hops_planning_phase_duration_seconds_count", (("kind", kind), ("phase", phase)))] == n
        phases = sum(v[("hops_planning_phase_duration_seconds_sum", (("kind", kind), ("phase", p)))]
                     for p in ("read", "plan", "enact"))
        assert v[("hops_planning_duration_seconds_sum", (("kind", kind),))] == pytest.approx(phases)
    # the cycle's named steps (label `step`): every planning timed by part, each refresh step once per refresh
    steps = _steps(v)
    assert steps[("refresh", "read")] >= 1 and steps[("round", "plannings")] >= len(main)
    assert steps[("round", "views")] == steps[("round", "plannings")]
    # one level down: every stage of each Hops planning (cycle="plan") and the enactor's phases (cycle="enact")
    assert {steps[("plan", name)] for name in stage_names(PLAN_STAGES)} == {steps[("plan", "unservable")]}
    assert steps[("plan", "solve")] >= len(main)
    # (the jobs were submitted before the daemon started: its restart recovery held them, untimed)
    assert all(steps[("enact", phase)] >= 1 for phase in ("reserve", "place", "env", "release", "allocations")), \
        " ".join(f"{k[1]}={n:g}" for k, n in steps.items() if k[0] == "enact")
    assert v[("hops_store_size_bytes", ())] > 0 and v[("hops_store_signatures", ())] >= 1
    assert v[("hops_enactment_errors_total", (("reason", "action_failed"),))] == 0
    if os.environ.get("HOPS_SCRAPE_OUT"):  # docs/admin-guide.md shows one such scrape
        Path(os.environ["HOPS_SCRAPE_OUT"]).write_text(text)
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=60) == 0
    log = eng.output(daemon)
    assert f"metrics on http://127.0.0.1:{port}/metrics" in log
    with pytest.raises(OSError):  # the endpoint went with the daemon
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5)


def test_metrics_port_in_use_is_one_line_error(eng) -> None:  # noqa: ANN001
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        with eng.config.open("a") as fh:
            fh.write(f"\n[metrics]\nport = {port}\n")
        daemon = eng.daemon()
        assert daemon.wait(timeout=60) == 1
    out = eng.output(daemon)
    assert f"metrics endpoint 127.0.0.1:{port}" in out and "Traceback" not in out

"""``hops-slurm bench load``: the engine under load: 10,000 pending Hops jobs, then sbatch at 50 jobs/s.

Where it sits: a benchmark (:mod:`hops_slurm.tools.bench`) left out of ``hops-slurm bench all`` and ``make
bench`` (``IN_ALL = False``): it takes minutes (about 2.5 on an idle 2-core machine, up to 30 when holding 10,000 jobs was one command each); run it by name, ``hops-slurm bench load``. Needs root and
the Debian Slurm packages; brings up its own minicluster from ``etc/minicluster/load.toml`` (own
ports and state directory, ``MaxJobCount=20000``) with the submit hook, and tears it down.

1. **Queue of 10,000.** Submits ``JOBS`` ``#HOPS`` jobs (three zoo models, requirement sets of 1-4
   GPUs) with parallel ``sbatch`` processes (not ``--array``: the engine schedules jobs, and pending
   array tasks are one record in Slurm's listing until they split). An in-process engine (as the
   daemon runs it) holds and profiles them (one probe per model and GPU type; not timed as a round),
   then runs ``ROUNDS`` rounds timed by phase with :func:`hops_slurm.tools.bench.engine_bench.timed_round`, each
   printed with the count of Slurm processes it ran (every client command is one), and the refresh's
   steps of each round as the engine times them (``hops_engine_step_duration_seconds{cycle="refresh"}``,
   :func:`step_seconds`). Peak RSS is the engine process's ``VmHWM`` (reset just before the engine opens).
2. **Submit rate.** With the 10,000 still queued, the real daemon (``hops-slurm daemon --foreground``,
   a child process; round every 60 s, refresh every 10 s) runs while ``RATE`` jobs/s are submitted for
   ``SECONDS`` seconds, each ``sbatch`` started on a fixed timetable. Counted: submit errors, the sbatch
   wall latency, and slurmctld's own time for each submit RPC (``_slurm_rpc_submit_batch_job ...
   usec=N`` in its log: the job_submit hook plus job creation, an upper bound on the hook's own time).
   The daemon's peak RSS is its ``VmHWM`` at the end.
Writes ``load.md`` under the output folder.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prometheus_client import CollectorRegistry

from hops_slurm.tools import results_header

NAME = "load"
#: brings up its own minicluster (root, the Slurm packages): ``bench --on-slurm`` runs it here, not as a task
ON_SLURM = False
IN_ALL = False  # too long for `hops-slurm bench all` / `make bench`: run it by name
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ()


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


JOBS = 10_000
ROUNDS = 5
#: the engine's timed cycles a round runs through (``hops_engine_step_duration_seconds{cycle}``)
CYCLES = ("refresh", "round", "planning", "enact")
#: the round's target with 10,000 pending (issue 37, item 3)
TARGET_S = 5.0
RATE = 50.0
SECONDS = 60.0
SUBMITTERS = 6
MODELS = (("1,2,4", "resnet18"), ("1,2", "mobilenetv2"), ("1", "vgg11"), ("2,4", "resnet18"))
SCRIPT = """#!/bin/bash
#HOPS gpus={gpus} samples={samples} batch-size=8 model={model} lr=0.1@{top}
sleep 3600
"""
_RPC = re.compile(r"_slurm_rpc_submit_batch_job: JobId=(\d+) .*usec=(\d+)")


def peak_rss_mib(pid: int | str = "self") -> float:
    """A process's peak resident set (``VmHWM``) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM in /proc/{pid}/status")


def reset_peak_rss() -> None:
    """Start this process's ``VmHWM`` again from its current RSS (Linux ``clear_refs`` 5)."""
    Path("/proc/self/clear_refs").write_text("5")


def percentile(values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) by the nearest-rank rule; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(-(-q * len(ordered) // 1)) - 1))]


def cpu_seconds(pid: int | str = "self") -> float:
    """A process's CPU time so far (user + system, ``/proc/PID/stat`` fields 14 and 15), seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    """CPU time of this process's children that ended and were waited for (the Slurm commands), seconds."""
    t = os.times()
    return t.children_user + t.children_system


def step_seconds(registry: CollectorRegistry, cycle: str) -> dict[str, float]:
    """Seconds spent so far in each step of ``cycle``: the sums of the engine's histogram
    ``hops_engine_step_duration_seconds{cycle, step}`` (the difference of two reads times what ran between)."""
    out: dict[str, float] = {}
    for family in registry.collect():
        if family.name != "hops_engine_step_duration_seconds":
            continue
        for sample in family.samples:
            if sample.name.endswith("_sum") and sample.labels.get("cycle") == cycle:
                out[sample.labels["step"]] = out.get(sample.labels["step"], 0.0) + sample.value
    return out


def step_table(per_round: list[dict[str, float]], order: Sequence[str], what: str = "refresh step") -> list[str]:
    """A markdown table: one row per step of ``order`` that ran, one column per round, seconds."""
    if not per_round:
        return []
    lines = [f"| {what} | " + " | ".join(f"round {i + 1}" for i in range(len(per_round))) + " |",
             "|---|" + "---|" * len(per_round)]
    for name in order:
        if any(name in r for r in per_round):
            lines.append(f"| {name} | " + " | ".join(f"{r.get(name, 0.0):.2f}" for r in per_round) + " |")
    return lines


def _scripts(work: Path) -> list[Path]:
    out = []
    for i, (gpus, model) in enumerate(MODELS):
        for k in range(1, 8):
            path = work / f"job{i}-{k}.sh"
            path.write_text(SCRIPT.format(gpus=gpus, samples=k * 100000, model=model, top=gpus.split(",")[-1]))
            out.append(path)
    return out


def _sbatch(script: Path, work: Path, env: dict[str, str]) -> tuple[str, float, str]:
    """(job id or "", wall seconds, error text)."""
    t0 = time.perf_counter()
    proc = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "-D", str(work), str(script)], env=env,
                          capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return "", wall, (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
    return proc.stdout.strip().split(";")[0], wall, ""


def _fill(scripts: list[Path], work: Path, env: dict[str, str]) -> tuple[float, list[str]]:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(SUBMITTERS) as pool:
        got = list(pool.map(lambda i: _sbatch(scripts[i % len(scripts)], work, env), range(JOBS)))
    errors = [e for _, _, e in got if e]
    return time.perf_counter() - t0, errors


def _paced(scripts: list[Path], work: Path, env: dict[str, str]) -> list[tuple[str, float, str, float]]:
    """``RATE`` sbatch per second for ``SECONDS``, each started at its slot (a thread each, so a slow
    one never delays the next); (job id, wall, error, lateness of its start)."""
    results: list[tuple[str, float, str, float]] = []
    lock = threading.Lock()
    threads = []
    start = time.perf_counter()

    def one(i: int, slot: float) -> None:
        late = time.perf_counter() - slot
        job, wall, err = _sbatch(scripts[i % len(scripts)], work, env)
        with lock:
            results.append((job, wall, err, late))

    for i in range(int(RATE * SECONDS)):
        slot = start + i / RATE
        delay = slot - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        t = threading.Thread(target=one, args=(i, slot), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join(timeout=180)
    return results


def _rpc_usec(log: Path, jobs: set[str]) -> list[float]:
    out = []
    with log.open(errors="replace") as fh:
        for line in fh:
            m = _RPC.search(line)
            if m and m.group(1) in jobs:
                out.append(int(m.group(2)) / 1000.0)
    return out


def _daemon_config(work: Path, state: Path) -> Path:
    path = work / "hops.toml"
    path.write_text(
        "[scheduler]\nround_length = 60\nqueue_refresh = 10\n[planner]\ntime_limit = 30\n"
        "[engine]\nprobe_size = \"tiny\"\nprobe_iterations = 3\nprobe_device = \"cpu\"\nsettle_timeout = 10\n"
        f"[paths]\nstate_dir = \"{state}\"\n")
    return path


def run(out_dir: Path) -> Path:
    from hops_slurm.tools.bench.engine_bench import ROUND_HEADER, round_line, timed_round, wait_profiled
    from hops_slurm.tools.bench.machine import load, machine_line
    from hops_slurm.bundled import bundle_root
    from hops_slurm.config import load_config
    from hops_slurm.engine.engine import Engine
    from hops_slurm.engine.refresh import STEPS
    from hops_slurm.engine.round import STEPS as ROUND_STEPS
    from hops_slurm.slurm.cli import READ_BACK_LIMIT
    from hops_slurm.slurm.read_detail import LIMIT as SHOW_LIMIT
    from hops_slurm.slurm.enact import ENACT_PHASES
    from hops_slurm.tools.minicluster.cluster import Minicluster
    from hops_slurm.tools.minicluster.processes import stop_child
    from hops_slurm.tools.minicluster.spec import load_spec
    from hops_slurm.slurm.cli import CliSlurm

    load0 = load()
    work = Path(tempfile.mkdtemp(prefix="hops-bench-load-"))
    os.chmod(work, 0o755)
    state = work / "state"
    spec = load_spec(bundle_root() / "etc" / "minicluster" / "load.toml")
    cluster = Minicluster(spec, job_submit_lua=bundle_root() / "hooks" / "job_submit.lua")
    cluster.down()
    for old in (spec.state_dir / "ctld").glob("hash.*"):  # a past run's jobs, which slurmctld -c would purge
        shutil.rmtree(old, ignore_errors=True)  # one file at a time (over its 20 s start on a busy machine)
    cluster.up()
    rows: list[dict[str, float | int | str]] = []
    steps: dict[str, list[dict[str, float]]] = {c: [] for c in CYCLES}  # per cycle, per round: seconds per step
    loads: list[float] = []  # the 1-minute load average after each round
    cpu: list[tuple[float, ...]] = []  # per round: CPU seconds of the engine, its Slurm commands, slurmctld
    listings: list[str] = []  # per round: the job listings read, by form (squeue's text, JSON)
    daemon: subprocess.Popen[bytes] | None = None
    try:
        env = cluster.env()
        scripts = _scripts(work)
        fill_s, fill_errors = _fill(scripts, work, env)
        cfg_path = _daemon_config(work, state)
        cfg = load_config(cfg_path)
        reset_peak_rss()
        api = CliSlurm(env)
        with Engine(cfg, api=api, env=env) as engine:
            profiling = wait_profiled(engine, JOBS - len(fill_errors), timeout=3600)
            ctld = cluster.status().daemons["slurmctld"][0]
            for r in range(ROUNDS):
                before = {c: step_seconds(engine.metrics.registry, c) for c in CYCLES}
                c0 = (cpu_seconds(), children_cpu_seconds(), cpu_seconds(ctld))
                read0, shown0 = dict(api.listings), api.calls["scontrol show job"]
                rows.append(timed_round(engine, r + 1))
                c1 = (cpu_seconds(), children_cpu_seconds(), cpu_seconds(ctld))
                shown = api.calls["scontrol show job"] - shown0  # a job each (started since the last JSON listing)
                listings.append(", ".join([*(f"{n - read0.get(k, 0)} {k}" for k, n in sorted(api.listings.items())
                                             if n > read0.get(k, 0)), *([f"{shown} scontrol show job"] if shown else [])])
                                or "none")
                cpu.append(tuple(b - a for a, b in zip(c0, c1)))
                loads.append(load())
                for c in CYCLES:
                    after = step_seconds(engine.metrics.registry, c)
                    steps[c].append({k: v - before[c].get(k, 0.0) for k, v in after.items()})
                print(f"round {r + 1}: {rows[-1]['total']:.2f} s, {rows[-1]['processes']} Slurm processes "
                      f"({rows[-1]['placed']} jobs placed)", flush=True)
            engine_rss = peak_rss_mib()
        load_mid = load()
        daemon_log = work / "daemon.log"
        with daemon_log.open("wb") as fh:
            daemon = subprocess.Popen([str(Path(sys.executable).parent / "hops-slurm"), "daemon", "--foreground", "--config", str(cfg_path)],
                                      env=env, stdout=fh, stderr=subprocess.STDOUT)
        time.sleep(15.0)  # its first refresh and round on the 10,000 (not part of the submit minute)
        paced = _paced(scripts, work, env)
        time.sleep(20.0)  # the daemon's next refresh holds the last of them
        daemon_alive = daemon.poll() is None
        daemon_rss = peak_rss_mib(daemon.pid) if daemon_alive else float("nan")
        load_end = load()
    finally:
        if daemon is not None:
            stop_child(daemon, timeout=60)
        cluster.down()
    ok = [p for p in paced if not p[2]]
    errors = [p[2] for p in paced if p[2]]
    walls = [p[1] * 1000 for p in ok]
    lates = [p[3] * 1000 for p in paced]
    rpc = _rpc_usec(spec.state_dir / "log" / "slurmctld.log", {p[0] for p in ok})
    out = out_dir / "load.md"
    totals = [float(r["total"]) for r in rows]
    lines = [
        "# Load: 10,000 pending Hops jobs, then sbatch at 50 jobs/s (live minicluster)",
        "",
        "Produced by `hops-slurm bench load` (hops_slurm/tools/bench/load.py; cluster etc/minicluster/load.toml: 24 fake "
        "GPUs, 2 x 8 a100 + 2 x 4 v100, Slurm 22.05, `MaxJobCount=20000`, the submit hook on). Not part of "
        "`make bench`: it takes a few minutes (10,000 sbatch); run it alone, as root: "
        "`flock /tmp/hops-live.lock .venv/bin/hops-slurm bench load`.",
        "",
        f"## One round with 10,000 pending jobs (target <= {TARGET_S:g} s, engine peak RSS <= 1 GiB)",
        "",
        f"{JOBS} jobs submitted by {SUBMITTERS} parallel sbatch processes in {fill_s:.0f} s "
        f"({JOBS / fill_s:.0f} jobs/s), {len(fill_errors)} errors{': ' + fill_errors[0] if fill_errors else ''}. "
        f"Then one in-process engine (CLI backend, solver {cfg.planner.solver}, time limit {cfg.planner.time_limit:g} s) held and profiled them "
        f"in {profiling:.0f} s (not a round: every new job gets an admin hold, one probe per model and GPU type), "
        "and ran rounds as the daemon does. Seconds per round:",
        "",
        *ROUND_HEADER,
        *(round_line(r) for r in rows),
        "",
        f"Round total: median **{statistics.median(totals):.2f} s**, max **{max(totals):.2f} s** over {len(totals)} "
        f"rounds; target <= {TARGET_S:g} s: **{'met' if max(totals) <= TARGET_S else 'not met'}** "
        f"(median {'within' if statistics.median(totals) <= TARGET_S else 'over'}).",
        "",
        "CPU seconds of each round (wall time on a busy machine counts the other processes' turns; these do not). "
        "A round runs its parts one after another, so on an idle machine its wall time is about its CPU time "
        f"(engine + Slurm commands + slurmctld): median **{statistics.median(sum(c) for c in cpu):.2f} s**, max "
        f"**{max(sum(c) for c in cpu):.2f} s** here.",
        "",
        "| round | wall | CPU (sum) | engine CPU | Slurm commands CPU | slurmctld CPU | job listings read | load average after it (1 min) |",
        "|---|---|---|---|---|---|---|---|",
        *(f"| {i + 1} | {float(rows[i]['total']):.2f} | {sum(c):.2f} | {c[0]:.2f} | {c[1]:.2f} | {c[2]:.2f} | {listings[i]} | "
          f"{loads[i]:.2f} |" for i, c in enumerate(cpu)),
        "",
        "On 22.05 the job listing is squeue's text with only the fields the engine reads (hops_slurm/slurm/read_text.py: "
        "about 1 MB for 10,000 jobs), split on a separator drawn for each read; the JSON listing (32 MB, every filter "
        "ignored) is read only when more jobs run whose GPU indices the text lacks (started since the last JSON "
        f"listing) than {SHOW_LIMIT} per read; up to that many, each one's come from `scontrol -o -d show job <id>` "
        "(hops_slurm/slurm/read_detail.py: one process a job, its record checked against the text listing).",
        "",
        "The refresh of each round (the \"read (refresh)\" column) by its steps (hops_slurm/engine/refresh.py), "
        "seconds, as the engine times them (`hops_engine_step_duration_seconds{cycle=\"refresh\"}`):",
        "",
        *step_table(steps["refresh"], [name for name, _ in STEPS]),
        "",
        "The rest of each round (`engine.round()`: hops_slurm/engine/round.py) by its steps (`cycle=\"round\"`), "
        "and each planning's parts inside `plannings` (`cycle=\"planning\"`: the plan, the enactment, the "
        "record and the job views made again after it):",
        "",
        *step_table(steps["round"], [name for name, _ in ROUND_STEPS], "round step"),
        *step_table(steps["planning"], ("plan", "enact", "record", "views"), "planning part")[2:],
        "",
        "The enactment's phases in each round (hops_slurm/slurm/enact.py, `cycle=\"enact\"`; those inside a "
        "refresh, e.g. its `settle` step verifying started jobs, count there too). With 10,000 jobs listed, Slurm "
        "22.05 cannot read back just the jobs a round started (`squeue --json` ignores `--jobs`), so the round does "
        f"not read the listing again (beyond {READ_BACK_LIMIT:,} jobs): the next refresh verifies them.",
        "",
        *step_table(steps["enact"], ENACT_PHASES, "enact phase"),
        "",
        f"Engine peak RSS (VmHWM of the engine's process, reset before the engine opened): **{engine_rss:.0f} MiB**. "
        f"Load average after this phase: {load_mid:.2f}.",
        "",
        f"## sbatch at {RATE:g} jobs/s for {SECONDS:g} s while the daemon runs (targets: no errors, hook p99 <= 20 ms)",
        "",
        f"The daemon (`hops-slurm daemon --foreground`, round every 60 s, refresh every 10 s) ran with the 10,000 "
        f"still queued; {len(paced)} sbatch started on a fixed timetable (start lateness p99 "
        f"{percentile(lates, 0.99):.0f} ms).",
        "",
        "| measure | n | p50 ms | p99 ms | max ms |",
        "|---|---|---|---|---|",
        f"| slurmctld submit RPC (`usec=` in its log: hook + job creation; upper bound on the hook) | {len(rpc)} | "
        f"{percentile(rpc, 0.5):.1f} | {percentile(rpc, 0.99):.1f} | {max(rpc, default=float('nan')):.1f} |",
        f"| sbatch wall (process start to exit) | {len(walls)} | {percentile(walls, 0.5):.0f} | "
        f"{percentile(walls, 0.99):.0f} | {max(walls, default=float('nan')):.0f} |",
        "",
        f"Submit errors: **{len(errors)}**{' (first: ' + errors[0] + ')' if errors else ''}. "
        f"Daemon {'still running' if daemon_alive else 'DIED'} at the end; its peak RSS (VmHWM) "
        f"**{daemon_rss:.0f} MiB** with {JOBS + len(ok)} jobs queued. Load average at the end: {load_end:.2f}.",
        "",
        machine_line(load0),
        "",
    ]
    return results_header.write(out, "\n".join(lines), generator=f"{__name__}:run",
                                 command=command(os.environ))

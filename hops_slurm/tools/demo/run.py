"""``make demo`` / ``hops-slurm demo``: a real workload scheduled by the Hops daemon on the minicluster.

Data flow: minicluster up (real slurmctld/slurmd, fake GPUs, submit hook) -> ``sbatch`` the scripts of
etc/demo/jobs at the times etc/demo/workload.toml gives (the hook rejects the malformed one and holds
the rest) -> ``hops-slurm daemon`` (a PID-tracked subprocess with etc/demo/hops.toml) profiles, plans
and places them round by round -> the jobs (etc/demo/train.py: real CPU PyTorch, emulated GPU speed)
train, checkpoint, resume after preemption, end -> the daemon's records -> ``hops-slurm report`` table
and ``--summary`` on stdout, ``report.md``, PNG plots and the run's records (:mod:`.ab`) into the report
folder -> daemon stopped -> unless ``hops_only``, the same jobs again under Slurm's own backfill, rigid
(:mod:`.rigid`), and both runs side by side (:mod:`.compare`; ``comparison.md`` with the A/B plots, and the
Slurm run's records, into the report folder) -> on a cluster with accounting, slurmdbd's export of the
jobs (:mod:`.export`) -> cluster stopped, also on error or Ctrl-C -> the commands that look at what it
made (:mod:`.next_steps`).

The report folder is var/demo (git-ignored) unless ``--out`` names another: ``--out docs/demo`` rewrites
the README's pictures. The daemon's state and records stay in the minicluster's state directory
(``<state_dir>/demo``). Running it twice is safe: the demo's own state is wiped at the start.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from hops_slurm import tomlfile
from hops_slurm.bundled import bundle_root, checkout_root
from hops_slurm.text import read_utf8
from hops_slurm.config import load_config
from hops_slurm.tools.demo.next_steps import shown
from hops_slurm.tools.demo.submission import Progress, Submission, sbatch_script
from hops_slurm.errors import ConfigError, HopsError
from hops_slurm.engine.failopen import HEARTBEAT
from hops_slurm.engine.offer import FILE_NAME as OFFER_FILE
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.minicluster.spec import MiniclusterSpec, load_spec

#: where the demo's outputs go: the checkout when run from one (make demo), else the current directory
ROOT = checkout_root() or Path.cwd()
#: the shipped files (hops_slurm.bundled): $HOPS_DEMO_ROOT of the job scripts, which run etc/demo/train.py
BUNDLE = bundle_root()
DEMO_DIR = BUNDLE / "etc" / "demo"
JOBS_DIR = DEMO_DIR / "jobs"
WORKLOAD = DEMO_DIR / "workload.toml"
SITE_CONFIG = DEMO_DIR / "hops.toml"
#: the report folder unless --out names another: inside the checkout, git-ignored (/var/ in .gitignore)
REPORT_DIR = ROOT / "var" / "demo"
#: the README's pictures and example output (committed): ``hops-slurm demo --out docs/demo`` rewrites them
README_DIR = ROOT / "docs" / "demo"
#: sacct exports recorded on the minicluster (tests/data/sacct/<release>/): the whatif step's example
RECORDED_EXPORTS = ROOT / "tests" / "data" / "sacct"
HOOK = BUNDLE / "hooks" / "job_submit.lua"
PROBE_PYTHON = DEMO_DIR / "probe-python"
#: ``hops-slurm`` run by this interpreter (``python -m`` cannot run the ``hops_slurm.cli`` package).
HOPS_SLURM = [sys.executable, "-c", "import sys; from hops_slurm.cli import main; sys.exit(main())"]
MARKER = ".hops-demo"  # marks a folder the demo created and may wipe


class DemoError(HopsError):
    """The demo could not finish: the daemon died, a job failed, or the workload did not end in time."""


def load_workload(jobs_dir: Path = JOBS_DIR, workload: Path | None = WORKLOAD) -> list[Submission]:
    """The job scripts of ``jobs_dir`` with their arrival times from ``workload`` ([arrivals] table)."""
    arrivals: dict[str, float] = {}
    if workload is not None:
        try:
            data = tomlfile.loads(read_utf8(workload, "workload file"))
        except (FileNotFoundError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{workload}: {exc}") from None
        arrivals = {str(k): float(v) for k, v in data.get("arrivals", {}).items()}
    scripts = sorted(jobs_dir.glob("*.sh"))
    unknown = sorted(set(arrivals) - {s.name for s in scripts})
    if unknown:
        raise ConfigError(f"{workload}: [arrivals] names scripts not in {jobs_dir}: {', '.join(unknown)}")
    if not scripts:
        raise ConfigError(f"{jobs_dir}: no *.sh job scripts")
    return sorted((Submission(s, arrivals.get(s.name, 0.0)) for s in scripts), key=lambda s: (s.at, s.script.name))


@dataclass(frozen=True)
class DemoDirs:
    """Where one demo run keeps its state: inside the minicluster's state directory."""

    root: Path

    @property
    def engine(self) -> Path:
        return self.root / "engine"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def config(self) -> Path:
        return self.root / "hops.toml"

    @property
    def pid_file(self) -> Path:
        return self.root / "daemon.pid"

    @property
    def records(self) -> Path:
        return self.engine / "records.sqlite"

    @property
    def env_dir(self) -> Path:
        return self.engine / "jobs"

    def reset(self) -> None:
        """Wipe what an earlier demo left here (only a folder the demo itself created)."""
        if self.root.exists():
            if not (self.root / MARKER).exists():
                raise DemoError(f"{self.root} exists but was not made by the demo; move it away")
            shutil.rmtree(self.root)
        for d in (self.root, self.engine, self.logs):
            d.mkdir(parents=True, exist_ok=True)
        (self.root / MARKER).write_text("made by hops-slurm demo; wiped at its next start\n")
        os.chmod(self.root, 0o755)


def write_site_config(source: Path, dest: Path, overrides: dict[str, dict[str, str]]) -> Path:
    """Copy ``source`` to ``dest`` with ``overrides`` ({section: {key: string value}}) set, keeping its
    comments; both files are checked with :func:`load_config`."""
    load_config(source)
    todo = {sec: dict(keys) for sec, keys in overrides.items()}
    out: list[str] = []
    section = ""

    def close_section() -> None:
        out.extend(f'{k} = "{v}"' for k, v in todo.pop(section, {}).items())

    for line in source.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            close_section()
            section = stripped.strip("[]").strip()
        else:
            key = stripped.split("=", 1)[0].strip() if "=" in stripped and not stripped.startswith("#") else ""
            if key and key in todo.get(section, {}):
                line = f'{key} = "{todo[section].pop(key)}"'
        out.append(line)
    close_section()
    for sec, keys in todo.items():
        out += ["", f"[{sec}]", *(f'{k} = "{v}"' for k, v in keys.items())]
    dest.write_text("\n".join(out) + "\n")
    load_config(dest)
    return dest


class Daemon:
    """``hops-slurm daemon --foreground`` as a child process in its own session, stopped by PID."""

    def __init__(self, config: Path, env: dict[str, str], log_path: Path) -> None:
        # `hops-slurm -vv demo` gives the daemon's log its step timings too (debug)
        verbose = ["-vv"] if logging.getLogger().getEffectiveLevel() <= logging.DEBUG else []
        self.argv = [*HOPS_SLURM, *verbose, "daemon", "--config", str(config), "--foreground"]
        self.env, self.log_path = env, log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, pid_file: Path) -> int:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(self.argv, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        pid_file.write_text(f"{self.proc.pid}\n")
        return self.proc.pid

    def wait_ready(self, state_dir: Path, timeout: float = 120.0, poll: float = 0.2) -> float:
        """Wait until the engine has made its first refresh (its heartbeat file appears under ``state_dir``):
        users submit to a running scheduler, as to a running slurmctld. Seconds waited."""
        t0 = time.monotonic()
        while not (state_dir / HEARTBEAT).exists():
            self.check_alive()
            if time.monotonic() - t0 > timeout:
                raise DemoError(f"the daemon made no refresh in {timeout:.0f} s; its log ({self.log_path}):\n{self.tail()}")
            time.sleep(poll)
        return time.monotonic() - t0

    def check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise DemoError(f"the daemon exited with status {self.proc.returncode}; its log ({self.log_path}):\n{self.tail()}")

    def tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (the daemon finishes its current step), then SIGKILL its whole session after ``timeout``."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        return self.proc.returncode


def stop_stale_daemon(pid_file: Path, config: Path) -> int | None:
    """Stop a daemon an earlier, killed demo left running (its PID file names it and its command line
    carries this demo's config path); returns its PID, None when there was none."""
    from hops_slurm.tools.minicluster import processes

    try:
        pid = int(pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    if not processes.is_alive(pid) or str(config) not in processes.cmdline(pid):
        return None
    processes.stop_pid(pid, timeout=30.0)
    return pid


def poll_jobs(cluster: Minicluster, progress: Progress, env_dir: Path) -> None:
    """Update ``progress`` from ``squeue -t all --json`` (a job gone from it keeps its last state); a
    running job's GPU count is the HOPS_GPUS the engine wrote into its env file."""
    import json

    from hops_slurm.slurm.enact import read_job_env

    result = cluster.run(["squeue", "-t", "all", "--json"], check=False, timeout=20)
    if result.returncode != 0:
        return  # slurmctld busy; the next poll retries
    for job in json.loads(result.stdout).get("jobs", []):
        job_id = str(job["job_id"])
        if job_id in progress.names:
            state = job.get("job_state")
            progress.states[job_id] = state[0] if isinstance(state, list) else str(state)
            if progress.states[job_id] == "RUNNING":
                try:
                    progress.gpus[job_id] = int(read_job_env(env_dir, job_id).get("HOPS_GPUS", "0"))
                except (OSError, ValueError):
                    progress.gpus[job_id] = 0


@contextmanager
def _interrupts_as_errors() -> Iterator[None]:
    """SIGTERM to the demo behaves like Ctrl-C, so the ``finally`` clauses tear everything down."""

    def _raise(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_demo(
    out: TextIO,
    spec: MiniclusterSpec | None = None,
    *,
    jobs_dir: Path = JOBS_DIR,
    workload: Path | None = WORKLOAD,
    site_config: Path = SITE_CONFIG,
    report_dir: Path | None = REPORT_DIR,
    timeout: float = 900.0,
    poll: float = 5.0,
    keep: bool = False,
    hops_only: bool = False,
    slurm_priority: str = "backfill",
) -> int:
    """Run the whole demo; 0 when every accepted job completed (in both runs). ``report_dir=None``: no
    Markdown/PNGs. ``hops_only``: skip the second run under Slurm's own scheduling. ``slurm_priority``:
    ``backfill`` (Slurm's default priority) or ``multifactor`` (the Slurm half with
    priority/multifactor and fair share on an accounting cluster: :mod:`hops_slurm.tools.demo.multifactor`)."""
    from hops_slurm.tools.demo.multifactor import demo_spec

    if hops_only and slurm_priority != "backfill":
        raise ConfigError("--slurm-priority applies to the Slurm half, which --hops-only leaves out")
    spec = demo_spec(spec or load_spec(), slurm_priority)
    submissions = load_workload(jobs_dir, workload)
    dirs = DemoDirs(spec.state_dir / "demo")
    cluster = Minicluster(spec, job_submit_lua=HOOK)
    daemon: Daemon | None = None
    began = time.time()
    export: Path | None = None
    try:
        with _interrupts_as_errors():
            print("== bringing up the minicluster (real slurmctld + one slurmd per node, fake GPUs)", file=out)
            status = cluster.up()
            print(f"   SLURM_CONF={status.conf}", file=out)
            print(cluster.run(["sinfo", "-N", "-o", "%N %P %G %T"]).stdout.rstrip(), file=out)
            stale = stop_stale_daemon(dirs.pid_file, dirs.config)
            if stale is not None:
                print(f"   stopped the daemon an earlier demo left running (pid {stale})", file=out)
            dirs.reset()
            offer_file = Path(status.conf).parent / OFFER_FILE
            config = write_site_config(site_config, dirs.config, {
                "paths": {"state_dir": str(dirs.engine)},
                # EMULATION: probes scaled to emulated GPU speed; offers through the hook beside slurm.conf
                "engine": {"probe_python": str(PROBE_PYTHON), "offer_file": str(offer_file)},
            })
            env = dict(cluster.env(), HOPS_JOB_ENV_DIR=str(dirs.env_dir), HOPS_DEMO_PYTHON=sys.executable,
                       HOPS_DEMO_ROOT=str(BUNDLE), HOPS_DEMO_STATE=str(dirs.root), PYTHONUNBUFFERED="1")
            daemon = Daemon(config, env, dirs.logs / "daemon.log")
            pid = daemon.start(dirs.pid_file)
            print(f"== started the Hops daemon (pid {pid}, config {config}, log {daemon.log_path})", file=out)
            ready = daemon.wait_ready(dirs.engine)
            print(f"   it made its first refresh after {ready:.1f} s: the jobs go to a running scheduler", file=out)
            progress = _run_workload(cluster, daemon, submissions, dirs, env, out, timeout, poll)
            _wait_recorded(daemon, dirs, list(progress.names), out)
            print("== stopping the daemon", file=out)
            daemon.stop()
            offer_file.unlink(missing_ok=True)  # no daemon, no offers (it closed them as it stopped)
            _show_jobs(progress, dirs, out)
            _report(dirs, report_dir, out, sum(g.gpus * g.count for g in spec.nodes))
            failed = [f"{progress.names[j]} ({progress.states.get(j)})" for j in progress.names
                      if progress.states.get(j) != "COMPLETED"]
            if failed:
                raise DemoError(f"jobs did not complete: {', '.join(failed)}; logs in {dirs.logs}")
            slurm_ids: list[str] = []
            if not hops_only:
                slurm_ids = _backfill_and_compare(spec, submissions, progress, dirs, env, out, report_dir, timeout, poll,
                                                  cluster if slurm_priority == "multifactor" else None)
            if spec.accounting:
                from hops_slurm.tools.demo.export import EXPORT_FILE, export_sacct

                export = export_sacct(cluster, began - 60.0, [*progress.names, *slurm_ids],
                                      (report_dir or dirs.root) / EXPORT_FILE, say=lambda line: print(line, file=out))
                print(f"== wrote slurmdbd's record of the jobs: {shown(export, Path.cwd())}", file=out)
    finally:
        if daemon is not None and daemon.stop() not in (None, 0):
            print(f"   the daemon exited with status {daemon.proc.returncode if daemon.proc else '?'}", file=out)
        if keep:
            print(f"== leaving the cluster up (export SLURM_CONF={cluster.conf_path}; hops-slurm minicluster down)", file=out)
        else:
            print("== tearing down", file=out)
            stopped = cluster.down()
            print(f"   stopped {len(stopped)} daemons", file=out)
    _print_next_steps(out, spec, dirs, report_dir, export, hops_only, slurm_priority)
    return 0


def _print_next_steps(out: TextIO, spec: MiniclusterSpec, dirs: DemoDirs, report_dir: Path | None, export: Path | None,
                      hops_only: bool, slurm_priority: str = "backfill") -> None:
    """The commands that look at what this run made (:mod:`hops_slurm.tools.demo.next_steps`), as they run from here."""
    from hops_slurm.tools.demo.ab import SLURM, SLURM_MULTIFACTOR, slug

    label = SLURM_MULTIFACTOR if slurm_priority == "multifactor" else SLURM
    from hops_slurm.tools.demo.next_steps import DemoOutputs, demo_steps, hops_slurm_command, render

    example = RECORDED_EXPORTS / spec.slurm / "sacct.json"
    outputs = DemoOutputs(
        records=dirs.records, config=dirs.config, report_dir=report_dir,
        slurm_records=None if hops_only or report_dir is None else report_dir / f"records-{slug(label)}.jsonl",
        export=export, example_export=example if example.is_file() else None)
    print(render(demo_steps(outputs), hops_slurm_command(), Path.cwd(), report_dir), end="", file=out)


def _run_workload(cluster: Minicluster, daemon: Daemon, submissions: list[Submission], dirs: DemoDirs,
                  env: dict[str, str], out: TextIO, timeout: float, poll: float) -> Progress:
    print(f"== submitting {len(submissions)} job scripts from {shown(submissions[0].script.parent, Path.cwd())} with sbatch"
          " (the submit hook validates #HOPS lines and holds each job for Hops)", file=out)
    progress = Progress(names={})
    queue = list(submissions)
    start = time.monotonic()
    last_line = ""
    while True:
        elapsed = time.monotonic() - start
        while queue and queue[0].at <= elapsed:
            sub = queue.pop(0)
            job_id = sbatch_script(sub.script, dirs.logs, env, out, elapsed)
            if job_id is not None:
                progress.names[job_id] = sub.script.stem
        daemon.check_alive()
        poll_jobs(cluster, progress, dirs.env_dir)
        if not queue and progress.ended():
            print(progress.line(elapsed, 0), file=out)
            return progress
        line = progress.line(elapsed, len(queue))
        if line.split("]", 1)[1] != last_line:
            print(line, file=out, flush=True)
            last_line = line.split("]", 1)[1]
        if elapsed > timeout:
            raise DemoError(f"the workload did not finish within {timeout:.0f} s; daemon log {daemon.log_path}:\n{daemon.tail()}")
        time.sleep(poll)


def _wait_recorded(daemon: Daemon, dirs: DemoDirs, job_ids: list[str], out: TextIO, timeout: float = 90.0) -> None:
    """Wait until the daemon's records show every job ended (it notices at its next monitor/refresh)."""
    from hops_slurm.report.source import RecordsError, open_source

    deadline = time.monotonic() + timeout
    while True:
        daemon.check_alive()
        try:
            ended = {j.job_id for j in open_source(dirs.records).load().jobs if j.end is not None}
        except RecordsError:
            ended = set()
        missing = [j for j in job_ids if j not in ended]
        if not missing:
            print("   the daemon has recorded every job's end", file=out)
            return
        if time.monotonic() > deadline:
            raise DemoError(f"the daemon did not record the end of jobs {', '.join(missing)} within {timeout:.0f} s;"
                            f" see {daemon.log_path}")
        time.sleep(1.0)


def _show_jobs(progress: Progress, dirs: DemoDirs, out: TextIO) -> None:
    """Each job's final state and how often it ran (a run after the first resumed from its checkpoint)."""
    import json

    print("== the jobs (runs > 1: preempted by a round and resumed from the checkpoint)", file=out)
    for job_id, name in progress.names.items():
        done = dirs.root / "ckpt" / job_id / "done.json"
        info = json.loads(done.read_text()) if done.exists() else None
        runs = " -> ".join(",".join(f"{n}:{k}" for n, k in r["config"].items()) for r in info["runs"]) if info else "-"
        samples = info["samples"] if info else 0
        print(f"   {job_id:>5} {name:<13} {progress.states.get(job_id, '?'):<10} {samples:>7} samples  runs: {runs}", file=out)


#: the demo's job table: the report's default fields with each job's forecast start (made when it was first
#: seen waiting, ``[engine] forecast``) beside its actual start
DEMO_REPORT_FORMAT = "JobID,JobName,User,Partition,Submit,Forecast,Start,End,Wait,EstRun,LR,GPUs,Config,Preemptions,State"


def _report(dirs: DemoDirs, report_dir: Path | None, out: TextIO, total_gpus: int) -> None:
    """``hops-slurm report`` and ``--summary`` on the daemon's records; Markdown, plots and the records
    themselves (:func:`hops_slurm.tools.demo.ab.keep_run`)."""
    if not dirs.records.exists():
        raise DemoError(f"the daemon wrote no records ({dirs.records} is missing); see {dirs.logs / 'daemon.log'}")
    base = [*HOPS_SLURM, "report", "--records", str(dirs.records), "--utc"]
    with_forecast = ["--format", DEMO_REPORT_FORMAT]
    for extra, title in ((with_forecast, f"hops-slurm report --format {DEMO_REPORT_FORMAT}"),
                         (["--summary"], "hops-slurm report --summary")):
        result = subprocess.run(base + extra, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            raise DemoError(f"{title} failed: {result.stderr.strip()}")
        print(f"== {title}", file=out)
        print(result.stdout.rstrip(), file=out)
    if report_dir is not None:
        from hops_slurm.report.markdown import write_markdown
        from hops_slurm.report.source import open_source

        records = open_source(dirs.records).load()
        now = records.last_time() or time.time()
        path = write_markdown(records, report_dir, now, simulated=False, title="Example: `make demo`", max_rows=20)
        print(f"== wrote {shown(path, Path.cwd())} and its plots", file=out)
        from hops_slurm.tools.demo.ab import HOPS, keep_run

        kept = keep_run(report_dir, HOPS, records.jobs, records.rounds, total_gpus, fresh=True)
        print(f"== kept the run's records in {shown(kept, Path.cwd())}", file=out)


def _backfill_and_compare(spec: MiniclusterSpec, submissions: list[Submission], progress: Progress, dirs: DemoDirs,
                          env: dict[str, str], out: TextIO, report_dir: Path | None, timeout: float, poll: float,
                          multifactor: Minicluster | None = None) -> list[str]:
    """The same jobs under Slurm's backfill (the daemon is stopped), then both runs side by side; the Slurm
    run's job ids. ``multifactor``: the cluster runs priority/multifactor; each job is charged to its team's
    account there (:mod:`hops_slurm.tools.demo.multifactor`)."""
    from hops_slurm.tools.demo import ab
    from hops_slurm.tools.demo.compare import comparison_markdown, comparison_text, summarise_run, with_hops_ages
    from hops_slurm.tools.demo.rigid import BackfillError, run_backfill, time_limit_minutes, write_rigid_scripts
    from hops_slurm.report import metrics
    from hops_slurm.report.source import open_source
    from hops_slurm.report.timefmt import format_elapsed
    from hops_slurm.slurm.cli import CliSlurm

    total_gpus = sum(g.gpus * g.count for g in spec.nodes)
    hops_jobs = [j for j in open_source(dirs.records).load().jobs if j.job_id in progress.names]
    ends = [j.end for j in hops_jobs if j.end is not None]
    makespan = max(ends) - min(j.submit for j in hops_jobs) if ends else 0.0
    minutes = time_limit_minutes(makespan)
    label = ab.SLURM
    account = None
    if multifactor is not None:
        from hops_slurm.tools.demo.multifactor import account_of

        label, account = ab.SLURM_MULTIFACTOR, account_of
    rigid = write_rigid_scripts(submissions, dirs.root / "rigid", max(g.gpus for g in spec.nodes), minutes, account)
    if multifactor is not None:
        import pwd

        from hops_slurm.tools.demo.multifactor import make_accounts, priority_settings

        made = make_accounts(multifactor, (account_of(job.name) for _, job in rigid), pwd.getpwuid(os.geteuid()).pw_name)
        print(f"== Slurm's multifactor priority with fair share: one account per model family ({', '.join(made)}),"
              f" each job charged to its family's; slurm.conf: {' '.join(priority_settings(multifactor.conf_path.read_text()))}",
              file=out)
    print(f"== the same {len(rigid)} jobs under Slurm's own scheduling: Hops daemon stopped, each job a rigid request"
          f" of the median of its gpus= set, no #HOPS lines (the hook leaves it alone), sched/backfill"
          f"{' with priority/multifactor' if multifactor is not None else ''}, --time={minutes}"
          " unless the script sets its own", file=out)
    try:
        names, slurm_jobs = run_backfill(CliSlurm(env), rigid, dirs.logs, env, out, timeout=timeout, poll=poll)
    except BackfillError as exc:
        raise DemoError(f"{exc}; logs in {dirs.logs}") from None
    slurm_jobs = with_hops_ages(slurm_jobs, names, {progress.names[j.job_id]: j.age_estimate for j in hops_jobs})
    print("== the jobs under Slurm (LR = wait / the age Hops estimated for the same job)", file=out)
    for j in slurm_jobs:
        config = ",".join(f"{n}:{k}" for n, k in (j.placements[-1].config if j.placements else {}).items()) or "-"
        lr = metrics.job_latency_ratio(j, j.end) if j.end is not None else None
        print(f"   {j.job_id:>5} {names[j.job_id]:<13} {j.state:<10} {config:<18} wait {format_elapsed(metrics.wait_time(j, j.end or 0))}"
              f"  JCT {format_elapsed(metrics.jct(j)) or '-'}  LR {'-' if lr is None else f'{lr:.2f}'}", file=out)
    runs = [summarise_run(ab.HOPS, hops_jobs, total_gpus), summarise_run(label, slurm_jobs, total_gpus)]
    print(f"== Hops beside Slurm's own scheduling: the same {len(rigid)} jobs on the same {total_gpus} GPUs", file=out)
    print(comparison_text(runs).rstrip(), file=out)
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        ab.keep_run(report_dir, label, slurm_jobs, (), total_gpus)
        type_of_node = {n: g.gpu_type for g in spec.nodes for n in g.node_names()}
        pngs = ab.write_ab_plots(report_dir, [(ab.HOPS, hops_jobs), (label, slurm_jobs)], total_gpus, type_of_node)
        path = report_dir / "comparison.md"
        path.write_text(f"# `make demo`: Hops beside Slurm's own scheduling\n\nThe same {len(rigid)} jobs on the same "
                        f"{total_gpus} GPUs (LR of a Slurm job: its wait over the age Hops estimated for it).\n\n"
                        + comparison_markdown(runs) + "\n" + ab.plots_markdown(pngs))
        print(f"== wrote {shown(path, Path.cwd())}, {', '.join(p.name for p in pngs)} and both runs' records ({ab.RUNS_FILE})", file=out)
        print(f"   GPUs in use: {ab.check_runs(report_dir)}", file=out)
    failed = [f"{names[j.job_id]} ({j.state})" for j in slurm_jobs if j.state != "COMPLETED"]
    if failed:
        raise DemoError(f"jobs did not complete under Slurm's scheduling: {', '.join(failed)}; logs in {dirs.logs}")
    return [j.job_id for j in slurm_jobs]

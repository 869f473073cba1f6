"""The Slurm backend over Slurm's client commands, for every supported release (22.05, 24.11, 26.05).

Where it sits: implements :class:`hops_slurm.slurm.api.SlurmApi` for the engine and the enactment
(:mod:`hops_slurm.slurm.enact`). It asks ``scontrol --version`` once which release it talks to and lets
:mod:`hops_slurm.slurm.dialect` choose the commands and the reader (``scontrol show job|nodes|reservation
--json`` from 23.02 on, ``squeue/sinfo --json`` and ``scontrol -o show reservation`` on 22.05, where the job
listing is squeue's text whenever it can answer: :mod:`hops_slurm.slurm.read_text`, with the GPU indices of
jobs started since the last JSON listing from ``scontrol -o -d show job``: :mod:`hops_slurm.slurm.read_detail`). Commands are
found on ``PATH`` and run as argv lists (never through a shell) with the given environment (``SLURM_CONF``),
so a ``PATH`` of wrapper scripts (e.g. ones that run the clients inside a Debian root) serves as well as the
real clients. A failure raises :class:`SlurmCommandError` naming the command and Slurm's message; a release
or data_parser it does not know raises :class:`hops_slurm.slurm.dialect.UnsupportedSlurm` naming it.
Many per-job changes (placements, reservations made or deleted) go to one ``scontrol`` that reads them from
its standard input (:meth:`CliSlurm.script`): only words without white space, quotes or other characters
scontrol's reader interprets are written there, and each change's outcome is read from scontrol's echo of it.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

from hops_slurm.slurm import read_data_parser, read_detail, read_text, read_v0038
from hops_slurm.slurm.api import ProbeJob, SlurmCommandError, SlurmError, SlurmJob, SlurmNode, SlurmReservation
from hops_slurm.slurm.dialect import Dialect, UnsupportedSlurm, dialect_for
from hops_slurm.slurm.read_common import JobCache

log = logging.getLogger(__name__)

_INVALID_JOB = "Invalid job id specified"
T = TypeVar("T")
#: a word that may go into a command read from ``scontrol``'s standard input: no white space (a line is
#: split on it), no quote, ``#`` or backslash (scontrol's reader may interpret them), only printable ASCII
_SCRIPT_WORD = re.compile(r"[!$-&(-\[\]-~]+")
#: what ``scontrol`` prints on success for the commands run as a script (everything else is a message)
_SCRIPT_SUCCESS = re.compile(r"Reservation created: \S+")
#: the prompt ``scontrol`` writes, with the line it read, for each command from standard input
PROMPT = "scontrol: "
#: the longest job listing the enactment reads again after releasing jobs where Slurm cannot read just those
#: (22.05: ``squeue --json`` of 10,000 jobs is 32 MB and seconds of CPU); beyond it the next refresh verifies
#: them (:func:`hops_slurm.slurm.batch.reads_back`)
READ_BACK_LIMIT = 2000


def script_safe(command: list[str]) -> bool:
    """True when ``command`` (scontrol's words, without ``scontrol``) can be one line of a script: every
    word non-empty or a ``K=`` clear, printable, without white space or quotes (a user name or value that
    is not is run as its own argv, never written into the script)."""
    return bool(command) and all(_SCRIPT_WORD.fullmatch(w) for w in command)


def script_outcomes(commands: list[list[str]], output: str) -> list[str | None] | None:
    """Read the output (standard output and error together, in order) of ``scontrol`` running ``commands``
    from its standard input: each command's message (None: it printed nothing but success), or None when
    the output cannot be attributed to the commands (the echo of each command, ``scontrol: <command>``,
    missing or out of order: a build without readline does not echo). The script ends with ``quit``."""
    lines = output.splitlines()
    starts: list[int] = []
    at = 0
    for command in [*commands, ["quit"]]:
        echo = PROMPT + " ".join(command)
        while at < len(lines) and lines[at].rstrip() != echo:
            if not starts and lines[at].strip():
                return None  # output before the first command: not ours to attribute
            at += 1
        if at == len(lines):
            if command == ["quit"]:  # scontrol gave up before it read the end of the script
                starts.append(at)
                break
            return None
        starts.append(at)
        at += 1
    outcomes: list[str | None] = []
    for i, start in enumerate(starts[:-1]):
        end = starts[i + 1]
        said = [ln.strip() for ln in lines[start + 1:end]
                if ln.strip() and ln.strip() != PROMPT.strip() and not _SCRIPT_SUCCESS.fullmatch(ln.strip())]
        outcomes.append("; ".join(said) or None)
    return outcomes


def _prctl() -> Callable[..., int] | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # type: ignore[no-any-return]
    except (OSError, AttributeError):  # not Linux
        return None


#: looked up once in the parent: the child between fork and exec only calls it (no loading, no allocating)
_PRCTL = _prctl()


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the child gets SIGKILL when the engine dies (PR_SET_PDEATHSIG), so a script it was given is
    not carried on after a crash (beyond the one command in flight)."""
    if _PRCTL is not None:
        _PRCTL(1, int(signal.SIGKILL))


def command_label(argv: list[str]) -> str:
    """A Slurm command by what it does, without its arguments: ``squeue``, ``sinfo``, ``scontrol show job``,
    ``scontrol update``, ``scontrol create reservation`` (options, ids and ``K=V`` fields left out)."""
    words = [a for a in argv[1:] if a.isalpha()][:2]
    if argv and argv[0] == "scontrol" and words and words[0] not in ("show", "create"):
        words = words[:1]
    return " ".join([argv[0] if argv else "", *words]) if argv else ""


class CliSlurm:
    """:class:`SlurmApi` over Slurm's command-line clients. ``env``: the environment (must carry SLURM_CONF
    unless the site's default config is meant; its ``PATH`` finds the clients); ``timeout``: seconds per
    command; ``dialect``: the release's dialect when known (otherwise asked of ``scontrol --version``)."""

    name = "cli"
    read_back_limit = READ_BACK_LIMIT

    def __init__(self, env: Mapping[str, str] | None = None, timeout: float = 30.0, dialect: Dialect | None = None) -> None:
        self.env = dict(env) if env is not None else None
        self.timeout = timeout
        self._dialect = dialect
        #: commands run so far, by :func:`command_label` (``hops-slurm bench calls`` and the live tests read it)
        self.calls: Counter[str] = Counter()
        #: the jobs of the last whole listing: a job whose record is unchanged is not read again
        self.job_cache = JobCache()
        #: what 22.05's text listing lacks (running jobs' GPU indices, described reasons' codes), from its JSON
        self.from_json = read_text.FromJson()
        #: job listings read so far, by form (``text``: squeue's text, tried first on 22.05; ``json``)
        self.listings: Counter[str] = Counter()
        #: jobs released since the last JSON listing: beyond :data:`read_detail.LIMIT` the next listing is read
        #: as JSON at once (the text lacks the GPU indices of the jobs that started, too many to ask scontrol)
        self._released = 0

    # ----- running commands -----------------------------------------------------------------------
    def _run(self, argv: list[str], stdin: str | None = None, env: Mapping[str, str] | None = None) -> str:
        """Run one command (``env``: instead of :attr:`env`); its standard output."""
        log.debug("slurm: %s", argv)
        self.calls[command_label(argv)] += 1
        try:
            # errors="replace": Slurm passes job names and comments through as raw bytes, so one job whose
            # name is not UTF-8 must not make the whole listing unreadable (it reads with U+FFFD instead).
            proc = subprocess.run(argv, env=self.env if env is None else dict(env), capture_output=True, text=True, encoding="utf-8",
                                  errors="replace", timeout=self.timeout, check=False, input=stdin)
        except FileNotFoundError as exc:
            raise SlurmCommandError(argv, 127, f"{argv[0]} not found: install the Slurm client commands") from exc
        except subprocess.TimeoutExpired as exc:
            raise SlurmCommandError(argv, 124, f"no answer within {self.timeout:g} s: is slurmctld up?") from exc
        if proc.returncode != 0:
            raise SlurmCommandError(argv, proc.returncode, proc.stderr or proc.stdout)
        return proc.stdout

    def script(self, commands: list[list[str]]) -> list[str | None] | None:
        """Run ``commands`` (each scontrol's words, e.g. ``["update", "JobId=7", "NodeList=a"]``) through one
        ``scontrol`` reading them from its standard input: one process for many different changes. Each
        command's message (None: done), or None when scontrol failed and its output cannot be attributed
        (the caller then runs each command on its own). Every command must be :func:`script_safe`; the
        child dies with the engine (a crash does not leave it running the rest of the script)."""
        if not commands:
            return []
        for command in commands:
            if not script_safe(command):
                raise ValueError(f"not a safe scontrol script line: {command!r}")
        argv = ["scontrol"]
        verb = " ".join(commands[0][:2]) if commands[0][0] == "create" else commands[0][0]
        log.debug("slurm: scontrol script of %d commands, the first %s", len(commands), commands[0])
        self.calls[f"scontrol {verb} (stdin)"] += 1
        text = "".join(" ".join(c) + "\n" for c in commands) + "quit\n"
        try:
            proc = subprocess.run(argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  encoding="utf-8", errors="replace", timeout=self.timeout + 0.05 * len(commands),
                                  check=False, input=text, preexec_fn=_die_with_parent)
        except FileNotFoundError as exc:
            raise SlurmCommandError(argv, 127, "scontrol not found: install the Slurm client commands") from exc
        except subprocess.TimeoutExpired as exc:
            raise SlurmCommandError(argv, 124, f"no answer within {self.timeout:g} s: is slurmctld up?") from exc
        if proc.returncode == 0:
            return [None] * len(commands)
        outcomes = script_outcomes(commands, proc.stdout)
        if outcomes is None or not any(outcomes):
            log.info("scontrol script of %d commands exited %d, output not attributable: %s",
                     len(commands), proc.returncode, proc.stdout[-500:])
            return None
        return [None if said is None else f"`scontrol {' '.join(c)}` failed (from standard input): {said}"
                for c, said in zip(commands, outcomes)]

    @property
    def dialect(self) -> Dialect:
        """The dialect of the Slurm on ``PATH`` (``scontrol --version``, asked once)."""
        if self._dialect is None:
            self._dialect = dialect_for(self._run(["scontrol", "--version"]))
        return self._dialect

    def listing_label(self) -> str:
        """The label of this release's job listing (``squeue`` on 22.05, ``scontrol show job`` later)."""
        return command_label(self.dialect.jobs_argv())

    def _read(self, argv: list[str], read: Callable[[str], list[T]]) -> list[T]:
        """Run ``argv`` and read its output with one of the dialect's readers."""
        out = self._run(argv)
        try:
            return read(out)
        except UnsupportedSlurm:
            raise
        except SlurmError as exc:
            raise SlurmCommandError(argv, 0, str(exc)) from None

    # ----- reading --------------------------------------------------------------------------------
    def jobs(self) -> list[SlurmJob]:
        d = self.dialect
        if d.text_listing and self._released <= read_detail.LIMIT:
            self.listings["text"] += 1
            jobs = self._text_jobs()
            if jobs is not None:
                return jobs
        self.listings["json"] += 1
        if not d.text_listing:
            return self._read(d.jobs_argv(), lambda text: d.jobs(text, self.job_cache))
        records: list[Any] = []

        def v0038(data: Mapping[str, Any]) -> list[SlurmJob]:
            records.extend(data.get("jobs") or [])  # their reasons' descriptions: read_text.FromJson
            return read_v0038.jobs(data, self.job_cache)

        jobs = self._read(d.jobs_argv(), lambda text: d.read(text, v0038, lambda data: read_data_parser.jobs(data, self.job_cache)))
        self.from_json.remember(jobs, records)
        self._released = 0
        return jobs

    def _text_jobs(self) -> list[SlurmJob] | None:
        """The job listing from squeue's text (:mod:`hops_slurm.slurm.read_text`), or None when the JSON
        listing must answer: the text is not what was asked for, or a job runs whose GPU indices the last
        JSON listing did not give (started since)."""
        separator = read_text.new_separator()
        try:
            out = self._run(list(read_text.ARGV), env=read_text.environment(self.env if self.env is not None else os.environ, separator))
        except SlurmCommandError as exc:
            if exc.returncode in (124, 127):  # no answer, no squeue: the JSON listing would fare no better
                raise
            log.info("squeue's text listing failed (%s): reading its JSON", exc)
            return None
        was = gc.isenabled()
        gc.disable()  # 10,000 records are 250,000 new objects, none of them garbage until the read ends
        try:
            found = read_text.records(out, separator)
            if found is None:
                log.info("squeue's text listing is not the records asked for: reading its JSON")
                return None
            return read_text.jobs(found, self.from_json, self.job_cache, self._allocations)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:  # a value the reader refuses
            log.info("squeue's text listing not read (%s: %s): reading its JSON", type(exc).__name__, exc)
            return None
        finally:
            if was:
                gc.enable()

    def _allocations(self, missing: list[tuple[dict[str, Any], tuple[str, ...]]]) -> list[dict[str, tuple[int, ...]]] | None:
        """The GPU indices per node of running jobs the text listing gave (records of
        :func:`read_text.json_record`, nodes expanded), one ``scontrol -o -d show job`` each
        (:mod:`hops_slurm.slurm.read_detail`); None when there are more than :data:`read_detail.LIMIT`, a job
        asks for no GPU, or one answer is not that job's whole allocation (the JSON listing answers then)."""
        if len(missing) > read_detail.LIMIT:
            log.info("%d jobs started since the last JSON listing: reading it again", len(missing))
            return None
        env = {**(self.env if self.env is not None else os.environ), **read_detail.TIME_FORMAT}
        out: list[dict[str, tuple[int, ...]]] = []
        for record, nodes in missing:
            if "gpu" not in record["tres_per_node"] and "gpu" not in record["tres_per_job"]:
                return None  # no GPU asked for: its allocation is the JSON's to say
            job_id = str(record["job_id"])
            try:
                text = self._run(read_detail.argv(job_id), env=env)
            except SlurmCommandError as exc:
                if exc.returncode in (124, 127):
                    raise
                log.info("scontrol show job %s failed (%s): reading the JSON listing", job_id, exc)
                return None
            alloc = read_detail.allocation(text, job_id, str(record["name"]), str(record["job_state"]),
                                           int(record["start_time"]), nodes)
            if alloc is None:
                log.info("scontrol's record of job %s is not its whole allocation: reading the JSON listing", job_id)
                return None
            out.append(alloc)
        return out

    def job(self, job_id: str) -> SlurmJob | None:
        d = self.dialect
        try:
            found = self._read(d.job_argv(job_id), d.jobs)
        except SlurmCommandError as exc:
            if _INVALID_JOB in exc.slurm_message:
                return None
            raise
        return next((j for j in found if j.job_id == str(job_id)), None)

    def jobs_of(self, job_ids: Collection[str]) -> list[SlurmJob] | None:
        """Just the jobs named (those slurmctld still lists), in one ``squeue --json --jobs=..`` where this
        release's squeue filters its JSON (:attr:`Dialect.filters_jobs`); None where it does not (22.05),
        where an id is not a plain job number, or where squeue refuses the id of a job slurmctld forgot
        (one job asked for): the whole listing answers then (:func:`hops_slurm.slurm.batch.jobs_of`)."""
        d = self.dialect
        wanted = sorted({str(j) for j in job_ids}, key=lambda j: (len(j), j))
        if not d.filters_jobs or not all(j.isdigit() for j in wanted):
            return None
        if not wanted:
            return []
        try:
            found = self._read(d.jobs_of_argv(wanted), d.jobs)
        except SlurmCommandError as exc:
            if _INVALID_JOB in exc.slurm_message:
                return None
            raise
        asked = set(wanted)
        return [j for j in found if j.job_id in asked]

    def nodes(self) -> list[SlurmNode]:
        d = self.dialect
        return self._read(d.nodes_argv(), d.nodes)

    def reservations(self) -> list[SlurmReservation]:
        d = self.dialect
        return self._read(d.reservations_argv(), d.reservations)

    # ----- acting ---------------------------------------------------------------------------------
    def hold(self, job_id: str) -> None:
        self.from_json.forget_reasons()  # a hold changes a reason's code, not its description
        self._run(["scontrol", "hold", str(job_id)])

    def release(self, job_id: str) -> None:
        self._released += 1
        self._run(["scontrol", "release", str(job_id)])

    def requeue_hold(self, job_id: str) -> None:
        self.from_json.forget_reasons()  # a hold changes a reason's code, not its description
        # Incomplete: only a job still running (or configuring, suspended) is requeued; without it 22.05
        # requeues a COMPLETED job too (docs/slurm-22.05-findings.md)
        self._run(["scontrol", "requeuehold", "Incomplete", str(job_id)])

    # list forms (hops_slurm.slurm.batch): one process for many jobs; 22.05 changes the jobs it can and
    # exits 1 naming any it cannot (the caller then tries each job on its own)
    def hold_all(self, job_ids: list[str]) -> None:
        self.from_json.forget_reasons()  # a hold changes a reason's code, not its description
        self._run(["scontrol", "hold", ",".join(job_ids)])

    def release_all(self, job_ids: list[str]) -> None:
        self._released += len(job_ids)
        self._run(["scontrol", "release", ",".join(job_ids)])

    def requeue_hold_all(self, job_ids: list[str]) -> None:
        self.from_json.forget_reasons()  # a hold changes a reason's code, not its description
        self._run(["scontrol", "requeuehold", "Incomplete", ",".join(job_ids)])

    def update_job_all(self, job_ids: list[str], fields: dict[str, str]) -> None:
        """One identical change to every job (``scontrol update JobId=ID,ID,... K=V``)."""
        self.from_json.forget_reasons()
        if fields:
            self._run(["scontrol", "update", f"JobId={','.join(job_ids)}", *(f"{k}={v}" for k, v in fields.items())])

    # per-job changes as one scontrol script (hops_slurm.slurm.batch.run_each): one process for all; each
    # takes the single-job method's arguments per change and returns each change's outcome (script)
    def update_job_each(self, changes: list[tuple[str, dict[str, str]]]) -> list[str | None] | None:
        self.from_json.forget_reasons()
        return self.script([["update", f"JobId={j}", *(f"{k}={v}" for k, v in f.items())] for j, f in changes])

    def create_reservation_each(self, specs: list[tuple[str, list[str], list[str], list[str]]]) -> list[str | None] | None:
        return self.script([self._reservation_words(*s) for s in specs])

    def delete_reservation_each(self, names: list[tuple[str]]) -> list[str | None] | None:
        return self.script([["delete", f"ReservationName={n}"] for (n,) in names])

    def signal_job(self, job_id: str, signal: str) -> None:
        # --batch: the batch script's own process only (what `exec python` makes the training process);
        # without it only srun steps get the signal, and --full would also hit every child (data loader
        # workers, a shell that does not trap it) -- docs/slurm-22.05-findings.md
        self._run(["scancel", "--batch", f"--signal={signal}", str(job_id)])

    def update_job(self, job_id: str, fields: dict[str, str]) -> None:
        self.from_json.forget_reasons()
        if not fields:
            return
        self._run(["scontrol", "update", f"JobId={job_id}", *(f"{k}={v}" for k, v in fields.items())])

    @staticmethod
    def _reservation_words(name: str, nodes: list[str], users: list[str], flags: list[str]) -> list[str]:
        words = ["create", "reservation", f"ReservationName={name}", f"Nodes={','.join(nodes)}",
                 f"Users={','.join(users)}", "StartTime=now", "Duration=UNLIMITED"]
        return words + ([f"Flags={','.join(flags)}"] if flags else [])

    def create_reservation(self, name: str, nodes: list[str], users: list[str], flags: list[str]) -> None:
        self._run(["scontrol", *self._reservation_words(name, nodes, users, flags)])

    def delete_reservation(self, name: str) -> None:
        self._run(["scontrol", "delete", f"ReservationName={name}"])

    def cancel(self, job_id: str) -> None:
        self._run(["scancel", str(job_id)])

    def submit_probe(self, probe: ProbeJob) -> str:
        return self._run(probe.sbatch_argv(), stdin=probe.script).strip().split(";")[0]

    def now(self) -> float:
        return time.time()


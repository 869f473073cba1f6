"""The Slurm backend over Slurm's client commands, for every supported release (22.05, 24.11, 26.05).

Where it sits: implements :class:`hops_slurm.slurm.api.SlurmApi` for the engine and the enactment
(:mod:`hops_slurm.slurm.enact`). It asks ``scontrol --version`` once which release it talks to and lets
:mod:`hops_slurm.slurm.dialect` choose the commands and the reader (``scontrol show job|nodes|reservation
--json`` from 23.02 on, ``squeue/sinfo --json`` and ``scontrol -o show reservation`` on 22.05). Commands are
found on ``PATH`` and run as argv lists (never through a shell) with the given environment (``SLURM_CONF``),
so a ``PATH`` of wrapper scripts (e.g. ones that run the clients inside a Debian root) serves as well as the
real clients. A failure raises :class:`SlurmCommandError` naming the command and Slurm's message; a release
or data_parser it does not know raises :class:`hops_slurm.slurm.dialect.UnsupportedSlurm` naming it.
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TypeVar

from hops_slurm.slurm.api import ProbeJob, SlurmCommandError, SlurmError, SlurmJob, SlurmNode, SlurmReservation
from hops_slurm.slurm.dialect import Dialect, UnsupportedSlurm, dialect_for

log = logging.getLogger(__name__)

_INVALID_JOB = "Invalid job id specified"
T = TypeVar("T")


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

    def __init__(self, env: Mapping[str, str] | None = None, timeout: float = 30.0, dialect: Dialect | None = None) -> None:
        self.env = dict(env) if env is not None else None
        self.timeout = timeout
        self._dialect = dialect
        #: commands run so far, by :func:`command_label` (``hops-slurm bench calls`` and the live tests read it)
        self.calls: Counter[str] = Counter()

    # ----- running commands -----------------------------------------------------------------------
    def _run(self, argv: list[str], stdin: str | None = None) -> str:
        log.debug("slurm: %s", argv)
        self.calls[command_label(argv)] += 1
        try:
            # errors="replace": Slurm passes job names and comments through as raw bytes, so one job whose
            # name is not UTF-8 must not make the whole listing unreadable (it reads with U+FFFD instead).
            proc = subprocess.run(argv, env=self.env, capture_output=True, text=True, encoding="utf-8",
                                  errors="replace", timeout=self.timeout, check=False, input=stdin)
        except FileNotFoundError as exc:
            raise SlurmCommandError(argv, 127, f"{argv[0]} not found: install the Slurm client commands") from exc
        except subprocess.TimeoutExpired as exc:
            raise SlurmCommandError(argv, 124, f"no answer within {self.timeout:g} s: is slurmctld up?") from exc
        if proc.returncode != 0:
            raise SlurmCommandError(argv, proc.returncode, proc.stderr or proc.stdout)
        return proc.stdout

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
        return self._read(d.jobs_argv(), d.jobs)

    def job(self, job_id: str) -> SlurmJob | None:
        d = self.dialect
        try:
            found = self._read(d.job_argv(job_id), d.jobs)
        except SlurmCommandError as exc:
            if _INVALID_JOB in exc.slurm_message:
                return None
            raise
        return next((j for j in found if j.job_id == str(job_id)), None)

    def nodes(self) -> list[SlurmNode]:
        d = self.dialect
        return self._read(d.nodes_argv(), d.nodes)

    def reservations(self) -> list[SlurmReservation]:
        d = self.dialect
        return self._read(d.reservations_argv(), d.reservations)

    # ----- acting ---------------------------------------------------------------------------------
    def hold(self, job_id: str) -> None:
        self._run(["scontrol", "hold", str(job_id)])

    def release(self, job_id: str) -> None:
        self._run(["scontrol", "release", str(job_id)])

    def requeue_hold(self, job_id: str) -> None:
        # Incomplete: only a job still running (or configuring, suspended) is requeued; without it 22.05
        # requeues a COMPLETED job too (docs/slurm-22.05-findings.md)
        self._run(["scontrol", "requeuehold", "Incomplete", str(job_id)])

    # list forms (hops_slurm.slurm.batch): one process for many jobs; 22.05 changes the jobs it can and
    # exits 1 naming any it cannot (the caller then tries each job on its own)
    def hold_all(self, job_ids: list[str]) -> None:
        self._run(["scontrol", "hold", ",".join(job_ids)])

    def release_all(self, job_ids: list[str]) -> None:
        self._run(["scontrol", "release", ",".join(job_ids)])

    def requeue_hold_all(self, job_ids: list[str]) -> None:
        self._run(["scontrol", "requeuehold", "Incomplete", ",".join(job_ids)])

    def update_job_all(self, job_ids: list[str], fields: dict[str, str]) -> None:
        """One identical change to every job (``scontrol update JobId=ID,ID,... K=V``)."""
        if fields:
            self._run(["scontrol", "update", f"JobId={','.join(job_ids)}", *(f"{k}={v}" for k, v in fields.items())])

    def signal_job(self, job_id: str, signal: str) -> None:
        # --batch: the batch script's own process only (what `exec python` makes the training process);
        # without it only srun steps get the signal, and --full would also hit every child (data loader
        # workers, a shell that does not trap it) -- docs/slurm-22.05-findings.md
        self._run(["scancel", "--batch", f"--signal={signal}", str(job_id)])

    def update_job(self, job_id: str, fields: dict[str, str]) -> None:
        if not fields:
            return
        self._run(["scontrol", "update", f"JobId={job_id}", *(f"{k}={v}" for k, v in fields.items())])

    def create_reservation(self, name: str, nodes: list[str], users: list[str], flags: list[str]) -> None:
        argv = ["scontrol", "create", "reservation", f"ReservationName={name}", f"Nodes={','.join(nodes)}",
                f"Users={','.join(users)}", "StartTime=now", "Duration=UNLIMITED"]
        if flags:
            argv.append(f"Flags={','.join(flags)}")
        self._run(argv)

    def delete_reservation(self, name: str) -> None:
        self._run(["scontrol", "delete", f"ReservationName={name}"])

    def cancel(self, job_id: str) -> None:
        self._run(["scancel", str(job_id)])

    def submit_probe(self, probe: ProbeJob) -> str:
        return self._run(probe.sbatch_argv(), stdin=probe.script).strip().split(";")[0]

    def now(self) -> float:
        return time.time()


"""What a sacct export says about one job, and what was wrong with a row: the readers' common output.

Where it sits: :mod:`.read_json` and :mod:`.read_parsable2` turn untrusted export text into
:class:`HistoryJob` rows and :class:`Problem` lines; :mod:`.exports` collects them into an
:class:`ExportReading`; :mod:`.assumptions` and :mod:`.replay` consume the jobs. Pure data, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hops_slurm.limits import MAX_JOB_GPUS  # noqa: F401 - the most GPUs a row may hold (one limit for all)

#: the largest export read (bytes); a site's year of history as JSON is a few hundred MB
MAX_EXPORT_BYTES = 512 * 1024 * 1024
#: the most job rows read from one export; rows beyond it are reported (one line), not read
MAX_ROWS = 200_000
#: text fields (names, users, partitions, comments) are cut to this many characters
MAX_TEXT = 256
#: the most problems listed one per line; the rest are counted
MAX_LISTED_PROBLEMS = 50

#: Slurm states of a job that ran and is over: it held its GPUs from start to end
ENDED_STATES = frozenset({"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY",
                          "PREEMPTED", "BOOT_FAIL", "DEADLINE"})


@dataclass(frozen=True)
class HistoryJob:
    """One job as the export recorded it (its last record when it was listed more than once)."""

    job_id: str
    where: str  # "line 12" (parsable2) or "jobs[3]" (JSON): where the row was in the export
    name: str
    user: str
    partition: str
    state: str  # base Slurm state, e.g. COMPLETED, CANCELLED
    submit: float  # epoch seconds
    start: float | None
    end: float | None
    gpus: int  # allocated GPUs, else requested (0: not a GPU job)
    gpu_type: str = ""  # from a typed TRES (gres/gpu:v100), "" when the export names none
    hops: str = ""  # the admin comment (the submit hook's canonical #HOPS form), "" when none
    nodes: int = 0  # allocated nodes, 0 when unknown
    node_names: tuple[str, ...] = ()  # the nodes it ran on (NodeList / nodes), () when the export names none
    time_limit: float | None = None  # seconds of its time limit (Timelimit / time.limit), None: unknown or unlimited

    @property
    def run_time(self) -> float | None:
        """Seconds the job held its allocation, or None when it did not start or has not ended."""
        if self.start is None or self.end is None:
            return None
        return self.end - self.start


@dataclass(frozen=True)
class Problem:
    """One bad or left-out row: where it was (line number or job id), what was wrong, and how bad."""

    where: str
    message: str
    severity: Literal["error", "warning"] = "error"

    def line(self) -> str:
        return f"hops-slurm: {self.severity}: {self.where}: {self.message}"


@dataclass
class ExportReading:
    """Everything read from one export."""

    source: str  # "sacct --json" or "sacct --parsable2"
    release: str  # "22.05", "24.11", "26.05" (JSON) or "" (parsable2 carries no release)
    jobs: list[HistoryJob] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    rows: int = 0  # job rows seen (steps not counted)
    steps: int = 0  # step rows (123.batch, 123.0) left out: not jobs

    @property
    def errors(self) -> int:
        return sum(1 for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for p in self.problems if p.severity == "warning")

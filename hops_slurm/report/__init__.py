"""Reports: sacct-style per-job accounting with latency ratios, queue-busyness summaries and plots.

Reads what the engine (SQLite) and the simulator (JSONL) record (:mod:`hops_slurm.records`), computes
the Hops metrics (:mod:`.metrics`) and GPU use over time (:mod:`.timeline`), prints tables (:mod:`.table`)
and summaries (:mod:`.summary`), draws plots (:mod:`.plots`) and cross-checks against Slurm accounting
(:mod:`.sacct`).
"""

from hops_slurm.report.accounting import JobFilter, JobRow, build_rows, select_jobs
from hops_slurm.report.source import RecordSet, open_source, write_jsonl, write_sqlite

__all__ = [
    "JobFilter",
    "JobRow",
    "RecordSet",
    "build_rows",
    "open_source",
    "select_jobs",
    "write_jsonl",
    "write_sqlite",
]

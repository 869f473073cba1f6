"""Profiling aid, not a test: the engine's own work for a long queue, on the stand-in for slurmctld.

``.venv/bin/python tests/hops_slurm/engine/standin_timing.py 10000 [--nodes 64] [--gpus 8] [--profile]``
queues N ``#HOPS`` jobs on :class:`standin.StandInSlurm` (no Slurm commands, so only the engine's CPU and
SQLite work is timed; ``--nodes`` nodes of ``--gpus`` GPUs, default 4 x 8; 64 x 8 is the 512-GPU stand-in),
runs the first refresh, then one refresh and one round, and prints their seconds, the Slurm operations
of the round (each one process on the CLI backend), the journal's commits in the round and the peak RSS.
Used to find the per-job costs behind ``hops-slurm bench load`` (docs/results/load.md); the live
numbers are that benchmark's.
"""

from __future__ import annotations

import cProfile
import logging
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hops_slurm.config import parse_config  # noqa: E402
from hops_slurm.engine.engine import Engine  # noqa: E402
from standin import StandInSlurm  # noqa: E402


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv and argv[0].isdigit() else 10000

    def option(name: str, default: int) -> int:
        return int(argv[argv.index(name) + 1]) if name in argv else default

    logging.disable(logging.WARNING)  # the stand-in's store has no measurements: one warning per job
    api = StandInSlurm(gpus_per_node=option("--gpus", 8), nodes=option("--nodes", 4))
    for i in range(n):
        api.submit(str(i + 1), f"gpus=1,2 samples={(1 + i % 7) * 1000} batch-size=8 model=resnet18")
    config = parse_config({"engine": {"settle_timeout": 0.2, "probe_size": "tiny"},
                           "paths": {"state_dir": str(Path(tempfile.mkdtemp()) / "state")}})
    engine = Engine(config, api=api).open()
    assert engine.state is not None
    engine.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])
    profile = cProfile.Profile() if "--profile" in argv else None
    try:
        t0 = time.perf_counter()
        engine.refresh()
        first = time.perf_counter() - t0
        if profile is not None:
            profile.enable()
        t0 = time.perf_counter()
        engine.refresh()
        t1 = time.perf_counter()
        calls, commits = len(api.calls), _commits(engine)
        planning = engine.round()
        t2 = time.perf_counter()
        calls, commits = len(api.calls) - calls, _commits(engine) - commits
        if profile is not None:
            profile.disable()
        assert planning is not None
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{n} jobs: first refresh {first:.2f} s; refresh {t1 - t0:.2f} s; round {t2 - t1:.2f} s (views "
              f"{planning.read_seconds:.2f}, plan {planning.plan_seconds:.2f}, enact {planning.enact_seconds:.2f}); "
              f"placed {len(planning.plan.placed())}; Slurm operations in the round {calls}; journal commits "
              f"in the round {commits}; peak RSS {peak:.0f} MiB")
        steps = _steps(engine)
        if steps:
            print("round steps (s): " + ", ".join(f"{c}/{st} {v:.2f}" for (c, st), v in steps.items() if c != "refresh"))
        if profile is not None:
            pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
    finally:
        engine.close()
    return 0


def _steps(engine: Engine) -> dict[tuple[str, str], float]:
    """Seconds per named step of the cycle so far (hops_engine_step_duration_seconds; empty before it existed)."""
    out = {}
    for family in engine.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == "hops_engine_step_duration_seconds_sum":
                out[(sample.labels["cycle"], sample.labels["step"])] = sample.value
    return out


def _commits(engine: Engine) -> int:
    """The journal's commits so far (SQLite's total_changes counts rows; a commit per statement here)."""
    assert engine.journal is not None
    return int(getattr(engine.journal, "commits", engine.journal.db.conn.total_changes))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The three sides of the what-if: Slurm as recorded, and the simulator's runs of each policy.

Where it sits: after :mod:`.assumptions`; before :mod:`.output`. Slurm as recorded becomes
:class:`~hops_slurm.records.JobRecord` rows on the replay's clock (seconds since the first replayed
submission), each held its GPUs from start to end, with the recorded run time as its age (the LR
denominator: what the job needed at its request). The simulated sides run through
:func:`hops_slurm.sim.runner.simulate` only (the simulator's public entry point), one policy after
another, with a progress bar on a terminal (:class:`hops_slurm.progress.StepBar`).

Without ``--cluster`` the simulated cluster is inferred from the export (:func:`infer_cluster`): servers
of :data:`INFERRED_GPUS_PER_SERVER` GPUs of the export's most common GPU type the simulator knows (else
v100), as many as the largest number of GPUs the recorded jobs held at one instant needs. That is the
smallest cluster on which Slurm's recorded schedule fits; pass the site's own cluster file for a real
answer (docs/whatif.md).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from hops_slurm.progress import StepBar
from hops_slurm.records import JobRecord, PlacementRecord, RoundRecord
from hops_slurm.sim.cluster import ClusterSpec
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.runner import Options, RunResult, simulate
from hops_slurm.text import printable
from hops_slurm.whatif.assumptions import Derived
from hops_slurm.whatif.history import HistoryJob

RECORDED = "slurm-recorded"
INFERRED_GPUS_PER_SERVER = 8


@dataclass
class Side:
    """One column of the comparison: its records, and the plan records when it was simulated."""

    label: str
    jobs: list[JobRecord]
    rounds: list[RoundRecord] = field(default_factory=list)
    result: RunResult | None = None
    error: str = ""


def recorded_records(jobs: Sequence[HistoryJob], derived: Sequence[Derived]) -> list[JobRecord]:
    """What Slurm did, for the jobs that are replayed, on the replay's clock."""
    by_id = {d.spec.job_id: d for d in derived}
    chosen = [j for j in jobs if j.job_id in by_id]
    if not chosen:
        return []
    t0 = min(j.submit for j in chosen)
    out = []
    for j in chosen:
        d = by_id[j.job_id]
        start, end = (j.start or 0.0) - t0, max((j.end or 0.0) - t0, (j.start or 0.0) - t0 + 1.0)
        out.append(JobRecord(
            job_id=j.job_id, name=j.name, user=j.user, partition=j.partition, submit=j.submit - t0,
            start=start, end=end, state=j.state, requirements=[j.gpus], age_estimate=end - start,
            total_samples=d.spec.total_samples,
            placements=[PlacementRecord(start=start, end=end, config={"recorded": j.gpus}, gpu_type=d.gpu_type)],
        ))
    return out


def peak_gpus(jobs: Sequence[HistoryJob]) -> int:
    """The most GPUs the jobs held at one instant (a job frees its GPUs at its end, before later starts)."""
    events = sorted([(j.start or 0.0, 1, j.gpus) for j in jobs] + [(j.end or 0.0, 0, -j.gpus) for j in jobs])
    level = peak = 0
    for _t, _kind, delta in events:
        level += delta
        peak = max(peak, level)
    return peak


def infer_cluster(jobs: Sequence[HistoryJob]) -> ClusterSpec:
    truth = GroundTruth()
    kinds = Counter(j.gpu_type for j in jobs if j.gpu_type in truth.gpu_types)
    gpu_type = kinds.most_common(1)[0][0] if kinds else "v100"
    need = max(peak_gpus(jobs), max((j.gpus for j in jobs), default=1), 1)
    count = math.ceil(need / INFERRED_GPUS_PER_SERVER)
    return ClusterSpec.model_validate({
        "name": "inferred",
        "description": f"inferred from the export: {count} x {INFERRED_GPUS_PER_SERVER} {gpu_type} "
                       f"(the recorded jobs held at most {need} GPUs at once)",
        "server_kind": [{"name": f"{gpu_type}-server", "gpu_type": gpu_type, "gpus": INFERRED_GPUS_PER_SERVER,
                         "count": count}],
    })


def run_policies(cluster: ClusterSpec, derived: Sequence[Derived], policies: Sequence[str], options: Options,
                 progress: bool) -> list[Side]:
    """Simulate every policy on the derived jobs; a policy that fails is a side with its error."""
    specs = tuple(d.spec for d in derived)
    sides: list[Side] = []
    with StepBar(len(policies), "policies", enabled=progress) as bar:
        for name in policies:
            bar.start(name)

            def tick(now: float, done: int, name: str = name) -> None:
                bar.current = f"{name}: {done}/{len(specs)} jobs, t={now / 3600:.1f} h;"

            try:
                result = simulate(cluster, specs, name, 0, options, on_round=tick)
            except Exception as exc:  # noqa: BLE001 - one failed policy must not lose the others
                text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                sides.append(Side(name, [], error=printable(text, 300)))
            else:
                sides.append(Side(name, result.jobs, result.rounds, result))
            bar.done()
    return sides

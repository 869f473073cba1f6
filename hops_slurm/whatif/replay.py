"""The three sides of the what-if: Slurm as recorded, and the simulator's runs of each policy.

Where it sits: after :mod:`.assumptions`; before :mod:`.output`. Slurm as recorded becomes
:class:`~hops_slurm.records.JobRecord` rows on the replay's clock (seconds since the first replayed
submission), each held its GPUs from start to end, with the recorded run time as its age (the LR
denominator: what the job needed at its request). The simulated sides run through
:func:`hops_slurm.sim.runner.simulate` only (the simulator's public entry point), one policy after
another, with a progress bar on a terminal (:class:`hops_slurm.progress.StepBar`).

Without ``--cluster`` the simulated cluster is inferred from the export (:func:`infer_cluster`), from its
input, not from its numbers: when rows name their nodes (``NodeList``, JSON ``nodes``), the cluster is
those nodes, each with the most GPUs a job held on it (a job's GPUs spread evenly over its nodes: the TRES
per node), of the GPU type its jobs had (else the export's most common one the simulator knows, else
v100). An export without node lists gets servers of :data:`INFERRED_GPUS_PER_SERVER` GPUs, as many as the
largest number of GPUs the recorded jobs held at one instant needs: the smallest cluster on which Slurm's
recorded schedule fits. Either way an inferred cluster of more than :data:`MAX_INFERRED_GPUS` GPUs (or
:data:`MAX_INFERRED_NODES` nodes) is refused on one line, before any simulation: pass the site's own
cluster file (docs/whatif.md), which is the real answer anyway.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from hops_slurm.config import SiteConfig
from hops_slurm.errors import HopsError
from hops_slurm.progress import StepBar
from hops_slurm.records import JobRecord, PlacementRecord, RoundRecord
from hops_slurm.sim.cluster_spec import ClusterSpec
from hops_slurm.sim.engine_run import simulate_engine
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.runner import Options, RunResult, simulate
from hops_slurm.sim.site import first_start_free
from hops_slurm.text import printable
from hops_slurm.validation import reason
from hops_slurm.whatif.assumptions import Derived
from hops_slurm.whatif.fields import MAX_GPUS_PER_NODE
from hops_slurm.whatif.history import HistoryJob

RECORDED = "slurm-recorded"
INFERRED_GPUS_PER_SERVER = 8
#: the largest cluster inferred from an export (a larger one takes the simulator minutes per job: pass --cluster)
MAX_INFERRED_GPUS = 4096
MAX_INFERRED_NODES = 4096


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


def peak_level(events: list[tuple[float, int]]) -> int:
    """The highest sum of ``(time, +GPUs / -GPUs)`` events (a release at an instant comes before a start)."""
    level = peak = 0
    for _t, delta in sorted(events):
        level += delta
        peak = max(peak, level)
    return peak


def peak_gpus(jobs: Sequence[HistoryJob]) -> int:
    """The most GPUs the jobs held at one instant (a job frees its GPUs at its end, before later starts)."""
    return peak_level([(j.start or 0.0, j.gpus) for j in jobs] + [(j.end or 0.0, -j.gpus) for j in jobs])


def _too_large(what: str) -> HopsError:
    return HopsError(f"the cluster inferred from the export ({what}) is larger than whatif infers "
                     f"({MAX_INFERRED_GPUS} GPUs on at most {MAX_INFERRED_NODES} nodes): pass the site's own --cluster FILE")


def infer_cluster(jobs: Sequence[HistoryJob]) -> ClusterSpec:
    """The simulated cluster of an export without ``--cluster`` (the module docstring); HopsError when larger
    than :data:`MAX_INFERRED_GPUS`."""
    truth = GroundTruth()
    kinds = Counter(j.gpu_type for j in jobs if j.gpu_type in truth.gpu_types)
    common = kinds.most_common(1)[0][0] if kinds else "v100"
    listed = [j for j in jobs if j.node_names]
    if listed:
        return _from_node_lists(listed, truth, common)
    need = max(peak_gpus(jobs), max((j.gpus for j in jobs), default=1), 1)
    if need > MAX_INFERRED_GPUS:
        raise _too_large(f"no node lists; the recorded jobs held {need} GPUs at once")
    count = math.ceil(need / INFERRED_GPUS_PER_SERVER)
    return ClusterSpec.model_validate({
        "name": "inferred",
        "description": f"inferred from the export: {count} x {INFERRED_GPUS_PER_SERVER} {common} "
                       f"(the recorded jobs held at most {need} GPUs at once)",
        "server_kind": [{"name": f"{common}-server", "gpu_type": common, "gpus": INFERRED_GPUS_PER_SERVER,
                         "count": count}],
    })


def _from_node_lists(jobs: Sequence[HistoryJob], truth: GroundTruth, common: str) -> ClusterSpec:
    """The nodes the export names, each with the most GPUs its jobs held at one instant (a job's GPUs
    spread evenly over its nodes; at most :data:`hops_slurm.whatif.fields.MAX_GPUS_PER_NODE`), of the GPU
    type its jobs had most."""
    events: dict[str, list[tuple[float, int]]] = {}
    types: dict[str, Counter[str]] = {}
    for j in jobs:
        share = math.ceil(j.gpus / len(j.node_names))
        for name in j.node_names:
            if name not in events and len(events) >= MAX_INFERRED_NODES:
                raise _too_large(f"more than {MAX_INFERRED_NODES} nodes named")
            events.setdefault(name, []).extend(((j.start or 0.0, share), (j.end or 0.0, -share)))
            if j.gpu_type in truth.gpu_types:
                types.setdefault(name, Counter())[j.gpu_type] += 1
    gpus = {name: min(peak_level(e), MAX_GPUS_PER_NODE) for name, e in events.items()}
    total = sum(gpus.values())
    if total > MAX_INFERRED_GPUS:
        raise _too_large(f"{len(gpus)} nodes with {total} GPUs")
    groups: Counter[tuple[str, int]] = Counter()
    for name, count in gpus.items():  # in the export's order: the planners' adjacency order
        kind = types[name].most_common(1)[0][0] if name in types else common
        groups[(kind, max(count, 1))] += 1
    return ClusterSpec.model_validate({
        "name": "inferred",
        "description": f"inferred from the export's node lists: {len(gpus)} nodes, {total} GPUs",
        "server_kind": [{"name": f"{kind}-{per}gpu", "gpu_type": kind, "gpus": per, "count": n}
                        for (kind, per), n in groups.items()],
    })


def replay_options(options: Options) -> Options:
    """The options of every simulated side: a job's first start costs nothing more than its recorded run
    time holds (the run time Slurm recorded began at its start, process start included); restarts after a
    move still pay ``process_start`` and the checkpoint load (:func:`hops_slurm.sim.site.first_start_free`)."""
    return first_start_free(options)


def _workload_id(record: JobRecord) -> JobRecord:
    """An engine record under its export's job id (the simulated slurmctld numbers jobs its own way and
    names each ``<export id>:<model>``), so every side's records name the same jobs."""
    export_id = record.name.rpartition(":")[0]
    return record.model_copy(update={"job_id": export_id}) if export_id else record


def is_hops(policy_name: str) -> bool:
    """A Hops policy (``hops``, ``hops:sigma=1.2``, ``hops-...``): the one the production engine runs."""
    return policy_name == "hops" or policy_name.startswith(("hops:", "hops-"))


def run_policies(cluster: ClusterSpec, derived: Sequence[Derived], policies: Sequence[str], options: Options,
                 progress: bool, site: SiteConfig | None = None) -> list[Side]:
    """Simulate every policy on the derived jobs; a policy that fails is a side with its error. The site's
    own policies (:data:`hops_slurm.sim.site.SITE_POLICIES`) run as Slurm runs (:mod:`hops_slurm.sim.site`,
    through :func:`hops_slurm.sim.runner.simulate`). Hops runs as the site's daemon would run it: the
    production engine (:func:`hops_slurm.sim.engine_run.simulate_engine`) with the site's configuration
    ``site`` (its planner, probes in place, restart prices, monitor step; the round and refresh of
    ``options``). Other policies run on the simulator's fast path."""
    specs = tuple(d.spec for d in derived)
    options = replay_options(options)
    sides: list[Side] = []
    with StepBar(len(policies), "policies", enabled=progress) as bar:
        for name in policies:
            bar.start(name)

            def tick(now: float, done: int, name: str = name) -> None:
                bar.current = f"{name}: {done}/{len(specs)} jobs, t={now / 3600:.1f} h;"

            try:
                if is_hops(name):
                    result = simulate_engine(cluster, specs, name, 0, options, on_round=tick, site=site)
                    result.jobs = [_workload_id(r) for r in result.jobs]
                else:
                    result = simulate(cluster, specs, name, 0, options, on_round=tick)
            except Exception as exc:  # noqa: BLE001 - one failed policy must not lose the others
                text = reason(exc)
                sides.append(Side(name, [], error=printable(text, 300)))
            else:
                sides.append(Side(name, result.jobs, result.rounds, result))
            bar.done()
    return sides

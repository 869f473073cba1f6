"""The estimator's learning curve, replayed: a workload's jobs in order through the production store.

Where it sits: the replay behind ``hops-slurm bench estimator-learning``
(:mod:`hops_slurm.tools.bench.estimator_learning` writes the report). Each job of the workload runs on
one configuration (GPU type x GPU count x layout); before it runs, every configuration its model runs on
in the workload is estimated through the planner's throughput function
(:meth:`hops_slurm.sim.knowledge.Knowledge.throughput_fn`: :class:`estimator.estimate.Estimator` over a
real SQLite :class:`estimator.store.ThroughputStore`), and when it ends its measured throughput (Gavel's
measured table, :class:`hops_slurm.sim.groundtruth.GroundTruth`) is written back as a recorder's
:class:`profiler.records.RuntimeRecord` through :func:`profiler.ingest.ingest_runtime` (the function the
engine's :func:`hops_slurm.engine.runtime_records.ingest_job` calls for each accepted record). A model is
probed (:func:`profiler.ingest.ingest_probe`) before its first job, and each GPU type's bandwidths come
from the simulated ``hops-slurm calibrate`` (:func:`hops_slurm.sim.measure.calibration`), on every model
or, held out, on the models of the other families only.

Configurations: a consolidated job of N GPUs takes N GPUs of one node; a spread one takes one GPU on each
of N nodes (Gavel's ``_unconsolidated`` figures do not say how many servers they span; the store keys
spread runs by node count). A job runs on a count of its requirement set that Gavel measured (1, 2, 4, 8;
8 for a job asking only more), a GPU type and a layout drawn from the seed, on the nodes after the last
job's (so the same configuration often runs on other servers: the type layer answers there).

What is recorded, per (model, configuration): the error of the estimate the first time the model's
knowledge reaches each :data:`STAGES` entry (see there), and per model the mean error over its
configurations after each of its runs (the learning curve). A configuration is estimated on the nodes
after those of the model's first run on it (other servers, as the next job there mostly gets). Nothing reads
a clock.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from estimator.estimate import config_throughput, per_gpu_estimate
from estimator.extrapolate import measured_points
from estimator.snapshot import Calibration, JobSnapshot
from hops_slurm.sim.groundtruth import GroundTruth, family
from hops_slurm.sim.knowledge import Knowledge
from hops_slurm.sim.measure import calibration, runtime_record
from hops_slurm.sim.workload import MULTI_GPU_FAMILIES, load_workload
from planner.views import ClusterView, NodeView

COUNTS = (1, 2, 4, 8)
NODES_PER_TYPE = 8
GPUS_PER_NODE = 8
WINDOW = 600.0  # seconds of the recorder window each finished run reports
#: what the model's knowledge holds about a configuration when its estimate is taken:
#: ``first``: nothing of the model has run (its probe and the type's calibration: the formula only);
#: ``type``: it ran on the same GPU type and layout at another multi-GPU count, never on this configuration;
#: ``other_layout``: it ran on the same GPU type only in the other layout (or on one GPU);
#: ``elsewhere``: it ran only on other GPU types; ``config``: it ran on this very configuration.
STAGES = ("first", "type", "other_layout", "elsewhere", "config")


@dataclass(frozen=True)
class Cell:
    """A configuration up to the nodes: GPU type, GPU count, layout."""

    gpu_type: str
    gpus: int
    spread: bool

    @property
    def layout(self) -> str:
        return "spread" if self.spread else "consolidated"


@dataclass(frozen=True)
class Run:
    """One job of the workload: its model, the cell it runs on and the nodes (node -> GPUs)."""

    job_id: str
    model: str
    cell: Cell
    start: int  # the index of its first node among its type's
    nodes: tuple[tuple[str, int], ...]


def node_name(gpu_type: str, i: int) -> str:
    return f"{gpu_type}-{i % NODES_PER_TYPE:02d}"


def cluster(gpu_types: Iterable[str]) -> ClusterView:
    return ClusterView(tuple(NodeView(node_name(t, i), t, t, GPUS_PER_NODE, GPUS_PER_NODE)
                             for t in gpu_types for i in range(NODES_PER_TYPE)))


def place(cell: Cell, start: int) -> tuple[tuple[str, int], ...]:
    """The nodes of ``cell`` starting at node ``start`` of its type (module docstring)."""
    if cell.spread:
        return tuple((node_name(cell.gpu_type, start + i), 1) for i in range(cell.gpus))
    return ((node_name(cell.gpu_type, start), cell.gpus),)


def multi_gpu_models(truth: GroundTruth) -> list[str]:
    """The models with a measured figure at every count and layout on every type (19 Gavel variants)."""
    return [m for m in truth.models if family(m) in MULTI_GPU_FAMILIES and all(
        truth.samples_per_second(m, t, n, s) > 0 for t in truth.gpu_types for n in COUNTS for s in (False, True))]


def plan_runs(truth: GroundTruth, seed: int, jobs: int) -> list[Run]:
    """The paper workload's jobs of multi-GPU models (seed ``seed``, ``jobs`` generated), each on a cell
    drawn from the seed among its requirement counts Gavel measured, every type and layout."""
    rng = random.Random(seed)
    usable = set(multi_gpu_models(truth))
    nxt: dict[str, int] = defaultdict(int)
    runs = []
    for spec in load_workload(f"paper:jobs={jobs}", seed, cluster_gpus=512):
        if spec.model not in usable:
            continue
        counts = [c for c in spec.requirements if c in COUNTS] or [max(COUNTS)]
        gpus = rng.choice(counts)
        cell = Cell(rng.choice(truth.gpu_types), gpus, gpus > 1 and rng.random() < 0.5)
        runs.append(Run(spec.job_id, spec.model, cell, nxt[cell.gpu_type], place(cell, nxt[cell.gpu_type])))
        nxt[cell.gpu_type] += 1 if not cell.spread else cell.gpus
    return runs


class _Subset:
    """Ground truth seen through the models of some families only (the held-out calibration)."""

    def __init__(self, truth: GroundTruth, families: Iterable[str]) -> None:
        keep = set(families)
        self.models = tuple(m for m in truth.models if family(m) in keep)
        self.samples_per_second = truth.samples_per_second


@dataclass
class Outcome:
    """What one replay recorded (module docstring)."""

    #: (model, cell, stage) -> (estimate, estimate without estimator.refine, measured) samples/s, the
    #: first time the stage was reached
    first_at: dict[tuple[str, Cell, str], tuple[float, float, float]] = field(default_factory=dict)
    #: model -> [(mean relative error over its cells, the same without estimator.refine) after k of its
    #: runs, k = 0, 1, ...]
    curve: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    #: (model, cell) -> layer that answered at each stage reached (reports)
    layers: dict[tuple[str, Cell, str], str] = field(default_factory=dict)
    #: (model, cell, stage) -> the estimate without estimator.family_refine (samples/s), when first reached
    no_family: dict[tuple[str, Cell, str], float] = field(default_factory=dict)
    #: (model, cell, "type") -> the estimate without estimator.peers (samples/s), and how many other
    #: signatures had run on the type and layout at both the model's count and the cell's then
    no_peers: dict[tuple[str, Cell, str], float] = field(default_factory=dict)
    coverage: dict[tuple[str, Cell, str], int] = field(default_factory=dict)
    #: (model, cell, "type") -> the model's snapshot and the cell type's calibration as the store held them
    #: then (other rules carry the one run from them: :mod:`hops_slurm.tools.bench.learning_carries`)
    held: dict[tuple[str, Cell, str], tuple[JobSnapshot, Calibration | None]] = field(default_factory=dict)
    jobs: int = 0


def stage_of(cell: Cell, ran: set[Cell]) -> str:
    """What a model that ran on ``ran`` knows of ``cell`` (:data:`STAGES`)."""
    if cell in ran:
        return "config"
    if not ran:
        return "first"
    same = [c for c in ran if c.gpu_type == cell.gpu_type]
    if any(c.spread == cell.spread and c.gpus > 1 for c in same):
        return "type"
    return "other_layout" if same else "elsewhere"


class Replay:
    """One replay's store and estimator; ``held_out``: the families whose models the type calibration
    must not see (None: calibrated on every model, as the simulator is)."""

    def __init__(self, truth: GroundTruth, *, held_out: Iterable[str] | None = None) -> None:
        self.truth = truth
        self.knowledge = Knowledge(cluster(truth.gpu_types), truth)
        self.knowledge.estimator.cross_model = True  # the layer under test (off in production: estimator.peers)
        if held_out is not None:
            others = _Subset(truth, set(MULTI_GPU_FAMILIES) - set(held_out))
            for gpu_type in truth.gpu_types:
                b_link, b_net = calibration(others, gpu_type)  # type: ignore[arg-type]
                self.knowledge.store.put_calibration(gpu_type, b_link=b_link, b_net=b_net, measured_at=0.0,
                                                     method="simulated calibrate on the other families")
            self.knowledge.source.forget("")  # the calibrations are read again

    def close(self) -> None:
        self.knowledge.close()

    @staticmethod
    def signature(model: str) -> str:
        return f"bench/{model}"

    def measured(self, model: str, cell: Cell) -> float:
        return self.truth.samples_per_second(model, cell.gpu_type, cell.gpus, cell.spread)

    def estimate(self, model: str, nodes: tuple[tuple[str, int], ...]) -> float:
        """The planner's estimate (samples/s) of ``model`` on ``nodes``."""
        return float(self.knowledge.throughput_fn(self.signature(model))(dict(nodes)))

    def unrefined(self, model: str, nodes: tuple[tuple[str, int], ...], *, family_only: bool = False) -> float:
        """The same estimate from the same store without :mod:`estimator.refine` and
        :mod:`estimator.family_refine` (``family_only``: without the latter only), the comparisons."""
        est, source = self.knowledge.estimator, self.knowledge.source
        return config_throughput(dict(nodes), source.snapshot(self.signature(model)), source.calibrations(),
                                 est.nodes, source.entity_factors(), refine=family_only, family=False)

    def without_peers(self, model: str, nodes: tuple[tuple[str, int], ...]) -> float:
        """The production estimate without :mod:`estimator.peers` (the comparison)."""
        est, source = self.knowledge.estimator, self.knowledge.source
        return config_throughput(dict(nodes), source.snapshot(self.signature(model)), source.calibrations(),
                                 est.nodes, source.entity_factors())

    def coverage(self, model: str, cell: Cell) -> int:
        """How many other signatures ran on ``cell``'s type and layout at both its count and the model's own
        count the peers layer carries from (the one nearest it with any; 0 when none)."""
        table, snap = self.knowledge.source.peers(), self.knowledge.source.snapshot(self.signature(model))
        aggregated = not cell.spread
        own = sorted((c for a, c, _ in measured_points(snap, cell.gpu_type) if a == aggregated and 2 <= c != cell.gpus),
                     key=lambda c: (abs(math.log(c / cell.gpus)), -c))
        counts = [len(table.answers(cell.gpu_type, aggregated, c, cell.gpus, snap.signature)) for c in own]
        return next((n for n in counts if n), 0)

    def layer(self, model: str, cell: Cell, nodes: tuple[tuple[str, int], ...]) -> str:
        source = self.knowledge.source
        est = per_gpu_estimate(source.snapshot(self.signature(model)), source.calibrations(),
                               gpu_type=cell.gpu_type, gpus=cell.gpus, nodes=len(nodes), server=nodes[0][0],
                               entity_factors=source.entity_factors(), peers=source.peers())
        return est.layer

    def probe(self, model: str, at: float, probe_gpus: tuple[int, ...] = ()) -> None:
        """The production probe on one GPU of every type; ``probe_gpus``: the counts it also runs
        data-parallel on one node of the type (``engine.probe_data_parallel``; none by default), whose
        throughputs :func:`profiler.ingest.ingest_probe` stores (Gavel's consolidated figures at those counts,
        what such a run would measure: :func:`hops_slurm.sim.measure.probe_result`)."""
        self.knowledge.probe(self.signature(model), model, at=at, probe_seconds=60.0, data_parallel=probe_gpus)

    def write_back(self, run: Run, at: float) -> None:
        """The finished run's recorder window, ingested as the engine ingests one (module docstring)."""
        cell = run.cell
        record = runtime_record(self.signature(run.model), run.model, cell.gpu_type, run.nodes[0][0],
                                gpus=cell.gpus, nodes=len(run.nodes), throughput=self.measured(run.model, cell),
                                window=WINDOW, at=at)
        self.knowledge.ingest(record)


def replay(truth: GroundTruth, runs: list[Run], *, held_out: Iterable[str] | None = None,
           evaluate: Iterable[str] | None = None, probe_gpus: tuple[int, ...] = ()) -> Outcome:
    """Replay ``runs`` in order (module docstring); estimates are taken for the models of ``evaluate``
    (default: every model); ``probe_gpus``: the counts each model's probe also runs data-parallel on one node
    of every type (``engine.probe_data_parallel``: :meth:`Replay.probe`; none by default). Stages stay those of
    the runs."""
    wanted = set(evaluate) if evaluate is not None else {r.model for r in runs}
    targets: dict[str, dict[Cell, tuple[tuple[str, int], ...]]] = defaultdict(dict)
    for r in runs:
        if r.cell.gpus > 1 and r.model in wanted:
            # the nodes after those of its first run there: the store must carry what it learned to other servers
            targets[r.model].setdefault(r.cell, place(r.cell, r.start + 1))
    out = Outcome(jobs=len(runs))
    ran: dict[str, set[Cell]] = defaultdict(set)
    rep = Replay(truth, held_out=held_out)
    try:
        for i, run in enumerate(runs):
            at = (i + 1) * WINDOW
            if not ran[run.model]:
                rep.probe(run.model, at, probe_gpus)
            if run.model in wanted:
                _observe(rep, out, run.model, targets[run.model], ran[run.model])
            rep.write_back(run, at)
            ran[run.model].add(run.cell)
        for model in wanted:
            _observe(rep, out, model, targets[model], ran[model])
    finally:
        rep.close()
    return out


def _observe(rep: Replay, out: Outcome, model: str, cells: dict[Cell, tuple[tuple[str, int], ...]],
             ran: set[Cell]) -> None:
    errors, before = [], []
    for cell, nodes in cells.items():
        estimate, plain, measured = rep.estimate(model, nodes), rep.unrefined(model, nodes), rep.measured(model, cell)
        errors.append(abs(estimate - measured) / measured)
        before.append(abs(plain - measured) / measured)
        key = (model, cell, stage_of(cell, ran))
        if key not in out.first_at:
            out.first_at[key] = (estimate, plain, measured)
            out.layers[key] = rep.layer(model, cell, nodes)
            out.no_family[key] = rep.unrefined(model, nodes, family_only=True)
            if key[2] == "type":
                out.no_peers[key] = rep.without_peers(model, nodes)
                out.coverage[key] = rep.coverage(model, cell)
                source = rep.knowledge.source
                out.held[key] = (source.snapshot(rep.signature(model)), source.calibrations().get(cell.gpu_type))
    if errors:
        out.curve.setdefault(model, []).append((sum(errors) / len(errors), sum(before) / len(before)))


__all__ = ["COUNTS", "STAGES", "Cell", "Outcome", "Replay", "Run", "cluster", "multi_gpu_models", "place",
           "plan_runs", "replay", "stage_of"]

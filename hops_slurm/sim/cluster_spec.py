"""Simulated cluster specifications: ``etc/clusters/<name>.toml`` -> :class:`ClusterSpec`.

Data flow: a cluster file names server kinds (GPU type, GPUs per server, entity speed factor, count)
and the profiler partition; the simulator expands it into nodes (``<kind>-<i>``, in file order = the
adjacency order planners use for configs) and builds :class:`planner.views.NodeView` from it.

What Slurm shows is kept apart from the truth. Policies see each node's GPU type and its server class:
the first of the ``features`` an administrator set on that kind's nodes, or the GPU type where none is
set (as :func:`hops_slurm.slurm.snapshot.server_class` reads a live node). The kind's ``name`` and
``speed``, and the per-node speeds of ``[[degraded]]`` nodes, are ground truth only: Hops has to learn
them from what jobs measure (its entity layer).

File format (TOML)::

    name = "paper-64"
    description = "..."
    [profiler]
    gpus_per_type = 1          # dedicated probe GPUs per GPU type (the profiler partition)
    probe_seconds = 60.0       # one probe run (1 GPU and a 2-server pair) on one type
    [[server_kind]]
    name = "v100-tigerway"     # server_class seen by Hops
    gpu_type = "v100"          # must have measured data (k80, p100, v100)
    gpus = 4
    count = 2
    speed = 1.0                # entity speed factor (1.0 = best server of this type): truth
    features = ["tigerway"]    # what the administrator set in slurm.conf (Features=); optional
    paper_hardware = "TIGERWAY YK8100-8G RTX3090"
    [[degraded]]               # optional: a node slower than its kind (truth only; Slurm shows nothing)
    node = "v100-tigerway-01"
    speed = 0.5
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from hops_slurm import tomlfile
from hops_slurm.bundled import bundle_root
from hops_slurm.text import read_utf8
from hops_slurm.errors import ConfigError
from hops_slurm.sim.groundtruth import GroundTruth, NodeSpeed
from planner.views import ClusterView, NodeView

#: the cluster files shipped with the package (etc/clusters: :func:`hops_slurm.bundled.bundled`)
CLUSTER_DIR = bundle_root() / "etc" / "clusters"


#: the most nodes a simulated cluster may have (each is a node of the simulated Slurm: memory and time grow with it)
MAX_NODES = 100_000


def _cluster_dirs() -> list[Path]:
    return [CLUSTER_DIR] if CLUSTER_DIR.is_dir() else []


class ServerKind(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    gpu_type: str
    gpus: int = Field(gt=0, le=64)
    count: int = Field(gt=0, le=MAX_NODES)
    speed: float = Field(default=1.0, gt=0.0, le=1.0)
    features: list[str] = Field(default_factory=list, max_length=16)
    paper_hardware: str = ""

    @property
    def visible_class(self) -> str:
        """The server class Slurm shows: the first administrator feature, else the GPU type."""
        return self.features[0] if self.features else self.gpu_type


class DegradedNode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    node: str
    speed: float = Field(gt=0.0, le=1.0)


class ProfilerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gpus_per_type: int = Field(default=1, ge=1)
    probe_seconds: float = Field(default=60.0, ge=0.0)


class ClusterSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    profiler: ProfilerSpec = ProfilerSpec()
    server_kind: list[ServerKind] = Field(min_length=1, max_length=1000)
    degraded: list[DegradedNode] = Field(default_factory=list, max_length=MAX_NODES)
    #: the last view with given free GPUs, and those: asked again with the same (a quiet fleet of 1,000 nodes
    #: between rounds), the same immutable view and the memos derived from it
    _last_view: tuple[dict[str, int], ClusterView] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _bounded(self) -> ClusterSpec:
        nodes = sum(k.count for k in self.server_kind)
        if nodes > MAX_NODES:
            raise ValueError(f"server_kind: {nodes} nodes in all (at most {MAX_NODES})")
        return self

    def nodes(self) -> list[tuple[str, ServerKind]]:
        """(node name, its server kind) in adjacency order."""
        out: list[tuple[str, ServerKind]] = []
        for kind in self.server_kind:
            out.extend((f"{kind.name}-{i:02d}", kind) for i in range(kind.count))
        return out

    @property
    def total_gpus(self) -> int:
        return sum(k.gpus * k.count for k in self.server_kind)

    @property
    def gpu_types(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(k.gpu_type for k in self.server_kind))

    def node_speeds(self) -> dict[str, NodeSpeed]:
        """Ground truth per node: GPU type and true speed (a degraded node's own, else its kind's)."""
        slow = {d.node: d.speed for d in self.degraded}
        return {name: NodeSpeed(kind.gpu_type, slow.get(name, kind.speed)) for name, kind in self.nodes()}

    def view(self, free: dict[str, int] | None = None) -> ClusterView:
        """The policy's view (what Slurm shows): every node with its GPU type and visible server class,
        ``free`` GPUs per node (all free when omitted)."""
        if free is not None and self._last_view is not None and self._last_view[0] == free:
            return self._last_view[1]
        view = ClusterView(
            tuple(
                NodeView(name, kind.gpu_type, kind.visible_class, kind.gpus, kind.gpus if free is None else free[name])
                for name, kind in self.nodes()
            )
        )
        if free is not None:
            self._last_view = (dict(free), view)
        return view


def known_clusters() -> list[str]:
    return sorted({p.stem for d in _cluster_dirs() for p in d.glob("*.toml")})


def load_cluster(name_or_path: str | Path) -> ClusterSpec:
    """A cluster by name (``paper-64``) from etc/clusters, or from a TOML file path; validated."""
    path = Path(name_or_path)
    if not path.is_file():
        path = next((d / f"{name_or_path}.toml" for d in _cluster_dirs() if (d / f"{name_or_path}.toml").is_file()), path)
    if not path.is_file():
        raise ConfigError(
            f"cluster {str(name_or_path)!r}: no such file and no etc/clusters/{name_or_path}.toml; "
            f"known clusters: {', '.join(known_clusters()) or 'none'}"
        )
    try:
        data = tomlfile.loads(read_utf8(path, "cluster file"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    try:
        spec = ClusterSpec.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{path}: {problems}") from exc
    truth = GroundTruth()
    for kind in spec.server_kind:
        if kind.gpu_type not in truth.gpu_types:
            raise ConfigError(
                f"{path}: server_kind {kind.name!r}: gpu_type {kind.gpu_type!r} has no measured data; "
                f"use one of {', '.join(truth.gpu_types)}"
            )
    names = [k.name for k in spec.server_kind]
    if len(set(names)) != len(names):
        raise ConfigError(f"{path}: server_kind names must be distinct, got {names}")
    nodes = {name for name, _ in spec.nodes()}
    for d in spec.degraded:
        if d.node not in nodes:
            raise ConfigError(f"{path}: degraded node {d.node!r} is not a node of this cluster (nodes are "
                              f"<server_kind name>-<index>, e.g. {next(iter(sorted(nodes)))})")
    return spec

"""The minicluster spec: which fake-GPU nodes, partitions, ports and state directory to bring up.

Read from ``etc/minicluster/*.toml`` (pydantic-validated, errors name the key path). The spec is the
input to :mod:`hops_slurm.tools.minicluster.conf` (slurm.conf/gres.conf) and :mod:`.cluster` (processes).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hops_slurm import tomlfile
from hops_slurm.text import read_utf8
from hops_slurm.errors import MiniclusterError
from hops_slurm.validation import format_validation_error

_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")


class NodeGroup(BaseModel):
    """``count`` nodes named ``{prefix}{1..count}``, each with ``gpus`` fake GPUs of one type."""

    model_config = ConfigDict(extra="forbid")

    prefix: str
    count: int = Field(ge=1, le=64)
    gpu_type: str
    gpus: int = Field(ge=0, le=16)
    cpus: int = Field(default=16, ge=1, le=512)
    memory_mb: int = Field(default=64000, ge=1000)
    server_class: str = ""  # entity class (defaults to the GPU type); exported as a node feature

    @field_validator("prefix", "gpu_type")
    @classmethod
    def _slurm_name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("must be lower-case letters, digits and '-', starting with a letter (max 31)")
        return v

    def node_names(self) -> list[str]:
        return [f"{self.prefix}{i}" for i in range(1, self.count + 1)]


class Partition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    nodes: list[str] = Field(default_factory=list)  # node names or group prefixes; empty = all nodes
    default: bool = False

    @field_validator("name")
    @classmethod
    def _slurm_name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("must be lower-case letters, digits and '-', starting with a letter")
        return v


class Ports(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slurmctld: int = Field(default=6817, ge=1024, le=65000)
    slurmd_base: int = Field(default=17001, ge=1024, le=65000)  # node i listens on slurmd_base + i
    slurmdbd: int = Field(default=6819, ge=1024, le=65000)
    mariadb: int = Field(default=13306, ge=1024, le=65000)


class MiniclusterSpec(BaseModel):
    """A whole local cluster. All daemons run on this host; nodes differ by name, port and fake GPUs."""

    model_config = ConfigDict(extra="forbid")

    cluster_name: str = "hopsmini"
    state_dir: Path = Path("/var/tmp/hops-minicluster")
    accounting: bool = False  # slurmdbd + MariaDB for sacct
    # with accounting: AccountingStorageEnforce=associations,limits,qos (jobs need an association; the
    # associations' and QOS's limits hold: docs/governance.md)
    enforce_limits: bool = False
    # with accounting: PriorityType=priority/multifactor with fair share (docs/governance.md); else Slurm's default
    multifactor: bool = False
    # 22.05: the host's Debian 12 packages; 24.11 / 26.05: a Debian trixie / sid root (roots.py).
    slurm: Literal["22.05", "24.11", "26.05"] = "22.05"
    ports: Ports = Field(default_factory=Ports)
    # slurm.conf MaxJobCount (jobs slurmctld keeps in memory, pending + running + recently ended); unset:
    # Slurm's default (10000). The load benchmark (etc/minicluster/load.toml) raises it.
    max_job_count: int | None = Field(default=None, ge=1000, le=2_000_000)
    nodes: list[NodeGroup]
    partitions: list[Partition]
    # the site's own job_submit.lua (relative: to the spec's directory), installed as job_submit.lua with the
    # Hops module files beside it (hops_submit.lua, hops_offer.lua): a site that keeps its hook (issue 33)
    site_hook: Path | None = None
    # The Hops partitions (the first the default), written to the hook's hops-partitions file when the
    # cluster runs the submit hook; unset: the partition named "hops" if there is one, else none.
    hops_partitions: list[str] | None = None

    @field_validator("cluster_name")
    @classmethod
    def _cluster_name(cls, v: str) -> str:
        if not re.match(r"^[a-z][a-z0-9]{0,39}$", v):
            raise ValueError("must be lower-case letters and digits, starting with a letter")
        return v

    @field_validator("state_dir")
    @classmethod
    def _absolute(cls, v: Path) -> Path:
        return v.expanduser().absolute()

    @model_validator(mode="after")
    def _consistent(self) -> MiniclusterSpec:
        names = self.node_names()
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"nodes: duplicate node names {dupes}")
        prefixes = {g.prefix for g in self.nodes}
        for i, part in enumerate(self.partitions):
            for ref in part.nodes:
                if ref not in names and ref not in prefixes:
                    raise ValueError(f"partitions.{i}.nodes: {ref!r} is neither a node nor a node-group prefix")
        if sum(p.default for p in self.partitions) > 1:
            raise ValueError("partitions: more than one partition has default = true")
        known = {p.name for p in self.partitions}
        for name in self.hops_partitions or []:
            if name not in known:
                raise ValueError(f"hops_partitions: {name!r} is not one of the partitions")
        if (self.enforce_limits or self.multifactor) and not self.accounting:
            raise ValueError("enforce_limits and multifactor need accounting = true (slurmdbd keeps associations)")
        last_port = self.ports.slurmd_base + len(names)
        if self.ports.slurmd_base <= self.ports.slurmctld <= last_port:
            raise ValueError("ports.slurmctld falls inside the slurmd port range")
        return self

    def node_names(self) -> list[str]:
        return [n for g in self.nodes for n in g.node_names()]

    def node_port(self, node: str) -> int:
        return self.ports.slurmd_base + self.node_names().index(node)

    def group_of(self, node: str) -> NodeGroup:
        for g in self.nodes:
            if node in g.node_names():
                return g
        raise KeyError(node)

    def hops_partition_names(self) -> list[str]:
        """The Hops partitions the hook is told about (``hops_partitions``, else one named ``hops``)."""
        if self.hops_partitions is not None:
            return list(self.hops_partitions)
        return [p.name for p in self.partitions if p.name == "hops"]

    def partition_nodes(self, part: Partition) -> list[str]:
        if not part.nodes:
            return self.node_names()
        out: list[str] = []
        for ref in part.nodes:
            group = next((g for g in self.nodes if g.prefix == ref), None)
            out.extend(group.node_names() if group else [ref])
        return list(dict.fromkeys(out))

    @property
    def conf_path(self) -> Path:
        return self.state_dir / "etc" / "slurm.conf"

    def with_release(self, release: str | None) -> MiniclusterSpec:
        """This spec on Slurm ``release`` (the command line's ``--slurm``). A release other than the
        spec's own gets its own state directory (``<state_dir>-slurm<release>``), so clusters of two
        releases never share slurmctld state or a munge key."""
        if release is None or release == self.slurm:
            return self
        data = self.model_dump()
        data.update(slurm=release, state_dir=self.state_dir.with_name(f"{self.state_dir.name}-slurm{release}"))
        try:
            return MiniclusterSpec.model_validate(data)
        except ValidationError as exc:
            raise MiniclusterError(f"--slurm {release}: {format_validation_error(exc)}") from None


def default_spec_path() -> Path:
    """The spec shipped with the project (``etc/minicluster/default.toml``, :func:`hops_slurm.bundled.bundled`)."""
    from hops_slurm.bundled import bundle_root

    return bundle_root() / "etc" / "minicluster" / "default.toml"


def load_spec(path: Path | None = None, slurm: str | None = None) -> MiniclusterSpec:
    """The spec at ``path`` (default: the shipped one); ``slurm`` overrides its release."""
    path = path or default_spec_path()
    try:
        data = tomlfile.loads(read_utf8(path, "minicluster spec"))
    except FileNotFoundError:
        raise MiniclusterError(f"minicluster spec {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise MiniclusterError(f"minicluster spec {path}: not valid TOML: {exc}") from None
    try:
        spec = MiniclusterSpec.model_validate(data)
    except ValidationError as exc:
        raise MiniclusterError(f"minicluster spec {path}:\n{format_validation_error(exc)}") from None
    if spec.site_hook is not None:
        hook = spec.site_hook if spec.site_hook.is_absolute() else path.parent / spec.site_hook
        if not hook.is_file():
            raise MiniclusterError(f"minicluster spec {path}: site_hook {hook} is not a file")
        spec = spec.model_copy(update={"site_hook": hook.absolute()})
    return spec.with_release(slurm)

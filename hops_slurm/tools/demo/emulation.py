"""EMULATED GPU speed for the demo jobs (``etc/demo/emulation.toml``): no GPUs exist on the demo machine.

Where it sits: ``etc/demo/train.py`` (a demo job, started by Slurm on the nodes the engine chose) asks
:meth:`Emulation.step_seconds` how long one training step on its allocation takes and sleeps out the
rest of the step after the real (tiny, CPU) forward/backward pass; the demo driver uses
:meth:`Emulation.job_seconds` to size the workload. The factors are made up for the demo and labelled
as emulation wherever they are printed.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hops_slurm import tomlfile
from hops_slurm.bundled import bundle_root
from hops_slurm.text import read_utf8
from hops_slurm.errors import ConfigError
from hops_slurm.validation import format_validation_error

DEFAULT_PATH = bundle_root() / "etc" / "demo" / "emulation.toml"
_NODE_INDEX = re.compile(r"-[0-9]+$")


class Scaling(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sync_overhead: float = Field(0.08, ge=0, description="extra step time per doubling of the GPU count")
    cross_node: float = Field(1.25, ge=1, description="step-time factor for a job spread over several nodes")


class Emulation(BaseModel):
    """Per-model step times on one A100 and per-GPU-type speed factors (see etc/demo/emulation.toml)."""

    model_config = ConfigDict(extra="forbid")

    step_seconds: dict[str, float]
    speed: dict[str, dict[str, float]]
    scaling: Scaling = Field(default_factory=Scaling)

    def speed_of(self, gpu_type: str, model: str) -> float:
        """Relative speed of ``gpu_type`` for ``model`` (A100 = 1)."""
        table = self.speed.get(gpu_type)
        if table is None:
            raise ConfigError(f"emulation: no speed for GPU type {gpu_type!r}; add [speed.{gpu_type}] to the emulation file")
        value = table.get(model, table.get("default"))
        if value is None or value <= 0:
            raise ConfigError(f"emulation: [speed.{gpu_type}] has no positive entry for {model!r} and no default")
        return value

    def step_seconds_of(self, model: str) -> float:
        if model not in self.step_seconds:
            raise ConfigError(f"emulation: no step time for model {model!r}; add it under [step_seconds]")
        return self.step_seconds[model]

    def step_time(self, model: str, config: dict[str, int]) -> float:
        """Seconds of one emulated step of ``model`` on ``config`` ({node: GPUs}): the slowest GPU type
        sets the pace, scaled by the sync overhead per doubling and the cross-node factor."""
        gpus = sum(config.values())
        if gpus < 1:
            raise ValueError(f"empty allocation {config!r}")
        speed = min(self.speed_of(gpu_type_of(node), model) for node, k in config.items() if k > 0)
        t = self.one_gpu_step(model, speed) * (1.0 + self.scaling.sync_overhead * math.log2(gpus))
        if sum(1 for k in config.values() if k > 0) > 1:
            t *= self.scaling.cross_node
        return t

    def one_gpu_step(self, model: str, speed_or_type: float | str) -> float:
        """Seconds of one emulated step of ``model`` on one GPU of a type (or of a relative speed)."""
        speed = self.speed_of(speed_or_type, model) if isinstance(speed_or_type, str) else speed_or_type
        return self.step_seconds_of(model) / speed

    def throughput(self, model: str, batch_size: int, config: dict[str, int]) -> float:
        """Emulated samples per second: every step counts GPUs x per-GPU batch samples."""
        return sum(config.values()) * batch_size / self.step_time(model, config)

    def job_seconds(self, model: str, batch_size: int, samples: int, config: dict[str, int]) -> float:
        """How long ``samples`` take on ``config`` (no restarts)."""
        return samples / self.throughput(model, batch_size, config)


def gpu_type_of(node: str) -> str:
    """The GPU type of a minicluster node: its name without the trailing ``-INDEX`` (``a100-2`` -> ``a100``; the
    demo spec names nodes PREFIX-INDEX with the GPU type as prefix)."""
    return _NODE_INDEX.sub("", node) or node


def parse_config(text: str) -> dict[str, int]:
    """``HOPS_PLACEMENT`` (``a100-1:4,a100-2:4``, what the engine writes into a job's env file) as a dict."""
    out: dict[str, int] = {}
    for part in text.split(","):
        node, sep, count = part.strip().partition(":")
        if not sep or not node or not count.isdigit():
            raise ValueError(f"HOPS_PLACEMENT entry {part!r} is not NODE:GPUS")
        out[node] = out.get(node, 0) + int(count)
    return out


def load_emulation(path: Path = DEFAULT_PATH) -> Emulation:
    try:
        data = tomlfile.loads(read_utf8(path, "emulation file"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        return Emulation.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {exc.error_count()} problem(s):\n{format_validation_error(exc)}") from None

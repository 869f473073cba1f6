"""Placement arithmetic and job environment files: the pure half of the enactment.

Where it sits: :mod:`hops_slurm.slurm.enact` asks, for each config of a plan, whether Slurm will allocate
exactly it (:func:`realisable`: Slurm 22.05 splits a per-job GPU count greedily in node order,
:func:`greedy_split`), which ``scontrol update`` fields request it (:func:`placement_fields`), and writes
the environment file a job sources when it starts (:func:`write_job_env`, :func:`hops_job_env`). No Slurm
command here; the files are the only I/O.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.errors import HopsError
from hops_slurm.rootfile import ensure_own_dir, remove_file, write_file
from hops_slurm.slurm.api import SlurmJob, SlurmNode
from planner.fragsplit import greedy_split, split_as_planned  # noqa: F401 - Slurm's split, stated once

log = logging.getLogger(__name__)


class PlacementError(HopsError):
    """A config cannot be enacted exactly on Slurm (unknown node, too many GPUs, unrealisable split)."""


# ----- placement arithmetic (pure) ----------------------------------------------------------------
def ordered_config(config: Mapping[str, int], node_order: list[str]) -> dict[str, int]:
    """``config`` without zero entries, in Slurm's node order."""
    rank = {n: i for i, n in enumerate(node_order)}
    unknown = sorted(n for n in config if n not in rank)
    if unknown:
        raise PlacementError(f"config names nodes Slurm does not know: {', '.join(unknown)}")
    return {n: int(config[n]) for n in sorted(config, key=rank.__getitem__) if config[n] > 0}


def realisable(config: Mapping[str, int], free: Mapping[str, int], node_order: list[str]) -> bool:
    """True if Slurm will allocate exactly ``config`` given the free GPUs per node. An even split is
    exact whenever it starts (it waits for busy GPUs); an uneven one only if the greedy split of the
    GPUs free now equals it. The split itself is stated once, in :mod:`planner.fragsplit` (the planner
    replays it with ``split_as_planned``)."""
    cfg = ordered_config(config, node_order)
    return split_as_planned(cfg, free, {n: i for i, n in enumerate(node_order)})


def placement_fields(config: Mapping[str, int], nodes: Mapping[str, SlurmNode], node_order: list[str]) -> dict[str, str]:
    """The ``scontrol update`` fields that make a pending job ask for exactly ``config``."""
    cfg = ordered_config(config, node_order)
    if not cfg:
        raise PlacementError("empty config: nothing to place")
    for n, k in cfg.items():
        if k > nodes[n].gpus_total:
            raise PlacementError(f"node {n} has {nodes[n].gpus_total} GPUs, the plan gives it {k}")
    # Untyped on purpose: the nodes fix the GPU type. Slurm 22.05 never starts a job whose typed GPU
    # request was changed to another type (BadConstraints), while an untyped request moves freely
    # between types (docs/slurm-22.05-findings.md).
    gpu = "gres:gpu"
    counts = set(cfg.values())
    fields = {"TresPerJob": "", "TresPerNode": ""}  # clear first: untyped -> typed needs it
    if len(counts) == 1:
        fields["TresPerNode"] = f"{gpu}:{counts.pop()}"
    else:
        fields["TresPerJob"] = f"{gpu}:{sum(cfg.values())}"
    fields["NumNodes"] = str(len(cfg))
    fields["NodeList"] = ",".join(cfg)
    return fields


# ----- job environment ----------------------------------------------------------------------------
def write_job_env(env_dir: Path, job_id: str, values: Mapping[str, str]) -> Path:
    """Write ``<env_dir>/<job_id>.env`` atomically (0644) for the job to source: ``export`` lines, so a
    plain ``. "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env"`` passes them on to the job's child processes.
    ``env_dir`` is root's own, 0711 (taken over if another user owned it; a job reads its own file by
    name, no one lists the others); the file is created exclusively, never through a link
    (:func:`hops_slurm.rootfile.write_file`; docs/security.md)."""
    if not job_id.isdigit() or len(job_id) > 20:
        raise ValueError(f"job id {job_id[:30]!r} is not a number")
    ensure_own_dir(env_dir, 0o711)
    write_file(env_dir, f"{job_id}.env", "".join(f"export {k}={shlex.quote(str(v))}\n" for k, v in values.items()).encode())
    return env_dir / f"{job_id}.env"


def remove_job_env(env_dir: Path, job_id: str) -> bool:
    """Remove the job's environment file once it ended (True if there was one); never follows a link."""
    if not job_id.isdigit() or len(job_id) > 20:
        return False
    return remove_file(env_dir, f"{job_id}.env")


def drop_job_env(env_dir: Path, job_id: str) -> None:
    """:func:`remove_job_env`, logged instead of raised (an ended job's file is tidied, never a failure)."""
    try:
        remove_job_env(env_dir, job_id)
    except OSError as exc:
        log.warning("job %s: its environment file stays: %s", job_id, exc)


def read_job_env(env_dir: Path, job_id: str) -> dict[str, str]:
    """The values :func:`write_job_env` wrote, read as the shell reads them: the whole file as one quoted
    text (a value may hold a newline, a carriage return or U+2028, which a line-by-line reading would cut)."""
    out = {}
    for word in shlex.split((env_dir / f"{job_id}.env").read_bytes().decode()):
        key, eq, value = word.partition("=")
        if eq and key:
            out[key] = value
    return out


#: the job's placement (``NODE:GPUS,...``, Slurm's node order) in its environment
PLACEMENT_VAR = "HOPS_PLACEMENT"
#: the placement's old name, still written beside it for one release (deprecated: ``$HOPS_CONFIG`` is the
#: site's configuration file to every hops-slurm command, :mod:`hops_slurm.config_path`)
OLD_PLACEMENT_VAR = "HOPS_CONFIG"


def placement_text(config: Mapping[str, int]) -> str:
    """A placement as the job reads it: ``a100-1:4,a100-2:4``."""
    return ",".join(f"{n}:{k}" for n, k in config.items())


def hops_job_env(directives: str | None, config: Mapping[str, int], extra: Mapping[str, str] | None = None, *,
                 placed: bool = True) -> dict[str, str]:
    """The environment a Hops job gets for ``config`` (the one builder: a release, an offer's adoption,
    failopen): ``HOPS_GPUS``, ``HOPS_LR`` (the learning rate the job's ``#HOPS lr=`` gives at that GPU count,
    when it set one), the placement ``HOPS_PLACEMENT`` (and ``HOPS_CONFIG``, its old name, for a release)
    unless ``placed`` is False (only a GPU count is known), and ``extra`` (e.g. runtime-recorder settings).
    ``directives``: the canonical form stored by the submit hook (``SlurmJob.directives``)."""
    from hops_slurm.directives import HopsDirectives, format_lr

    gpus = sum(int(k) for k in config.values() if k > 0)
    env = {"HOPS_GPUS": str(gpus)}
    if directives:
        lr = HopsDirectives.from_canonical(directives).lr_for(gpus)
        if lr is not None:
            env["HOPS_LR"] = format_lr(lr)
    if placed:
        env[PLACEMENT_VAR] = env[OLD_PLACEMENT_VAR] = placement_text(config)
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class Placement:
    """One job to place: its config, the ``scontrol update`` fields (:func:`placement_fields`) and its
    environment (:func:`hops_job_env`)."""

    job: SlurmJob
    config: dict[str, int]
    fields: dict[str, str]
    env: dict[str, str]

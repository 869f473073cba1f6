"""What a probe runs: a model, a data loader, an optimizer and a loss (:class:`ProbeJob`).

Built either by :mod:`profiler.zoo` or by a user entrypoint ``pkg.module:build``
(:func:`load_entrypoint`), then measured by :mod:`profiler.probe`.

An entrypoint is a callable taking no arguments that returns a :class:`ProbeJob` or a tuple
``(model, loader, optimizer, loss_fn)``. Batches are ``(inputs, targets)`` and the loss is
``loss_fn(model(inputs), targets)``. Optional ``after_backward(model)`` runs between the backward pass
and the optimizer step, where the user's loop does its own work (gradient clipping, a finite check).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from hops_slurm.errors import HopsError


class EntrypointError(HopsError):
    """The user entrypoint could not be imported, called, or returned something unusable."""


@dataclass
class ProbeJob:
    name: str
    model: nn.Module
    loader: Iterable[Any]
    optimizer: torch.optim.Optimizer
    loss_fn: Callable[[Any, Any], Tensor]
    batch_size: int
    input_shape: tuple[int, ...]
    after_backward: Callable[[nn.Module], None] | None = None

    @property
    def params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())


def load_entrypoint(spec: str) -> ProbeJob:
    """Import ``pkg.module:build``, call it and return the job it describes."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise EntrypointError(f"entrypoint {spec!r} must look like 'pkg.module:build'")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's to fix
        raise EntrypointError(f"cannot import module {module_name!r} of entrypoint {spec!r}: {exc}") from exc
    build = getattr(module, attr, None)
    if not callable(build):
        raise EntrypointError(f"entrypoint {spec!r}: module {module_name!r} has no callable {attr!r}")
    try:
        built = build()
    except Exception as exc:  # noqa: BLE001
        raise EntrypointError(f"entrypoint {spec!r} raised {type(exc).__name__}: {exc}") from exc
    if isinstance(built, ProbeJob):
        return built
    if not (isinstance(built, tuple) and len(built) == 4):
        raise EntrypointError(
            f"entrypoint {spec!r} must return a profiler.job.ProbeJob or (model, loader, optimizer, loss_fn), "
            f"got {type(built).__name__}"
        )
    model, loader, optimizer, loss_fn = built
    if not isinstance(model, nn.Module):
        raise EntrypointError(f"entrypoint {spec!r}: first item must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise EntrypointError(f"entrypoint {spec!r}: third item must be a torch.optim.Optimizer")
    try:
        inputs, _ = next(iter(loader))
    except Exception as exc:  # noqa: BLE001
        raise EntrypointError(f"entrypoint {spec!r}: loader must yield (inputs, targets) batches: {exc}") from exc
    if not isinstance(inputs, Tensor) or inputs.dim() < 1:
        raise EntrypointError(f"entrypoint {spec!r}: batch inputs must be a tensor with a batch dimension")
    return ProbeJob(
        name=spec, model=model, loader=loader, optimizer=optimizer, loss_fn=loss_fn,
        batch_size=int(inputs.shape[0]), input_shape=tuple(int(d) for d in inputs.shape[1:]),
    )

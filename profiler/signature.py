"""Job signatures: the key under which the estimator's store files every measurement of one job.

Probes (:mod:`profiler.probe`), the running-mode recorder (:mod:`profiler.runtime`) and the engine
all compute the same signature from the same four facts, so rows written from a probe result and from
runtime records of the same job land under one key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence


def job_signature(model: str, params: int, batch_size: int, input_shape: Sequence[int]) -> str:
    """A stable 16-hex-digit hash of (model name or entrypoint, parameter count, per-GPU batch size,
    input shape of one sample).

    Stable across processes, machines and Python versions (SHA-256 of a canonical JSON text).
    """
    if not model:
        raise ValueError("job_signature: model name or entrypoint must not be empty")
    if params < 0 or batch_size <= 0:
        raise ValueError(f"job_signature: need params >= 0 and batch_size > 0, got {params}, {batch_size}")
    canonical = json.dumps(
        {"model": model, "params": int(params), "batch_size": int(batch_size), "input_shape": [int(d) for d in input_shape]},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def family_signature(model: str, params: int, input_shape: Sequence[int], owner: str = "") -> str:
    """The key of a job's *family*: its signature's facts without the per-GPU batch size (the same network
    at other batch sizes; :mod:`estimator.family`), within ``owner``'s jobs when given (a user's own code,
    an entrypoint, is a family only with that user's jobs). Empty for an empty model name."""
    if not model:
        return ""
    canonical = json.dumps({"model": model, "params": int(params), "input_shape": [int(d) for d in input_shape],
                            "owner": owner}, sort_keys=True, separators=(",", ":"))
    return "family:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]

"""Job signatures: the key under which the store keeps a job's measurements.

Two submissions of the same model with the same per-GPU batch size (and the same optional extra
traits, e.g. dataset or precision) share a signature, so a re-submitted model reuses what earlier
runs measured. Computed by whoever ingests a job (engine, profiler); the estimator only compares them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping


def job_signature(model: str, batch_size: int, extra: Mapping[str, str | int | float] | None = None) -> str:
    """``<model-slug>-b<batch>-<12 hex>``: readable, and stable across runs and Python versions."""
    if not model.strip():
        raise ValueError("job_signature: model name is empty")
    if batch_size <= 0:
        raise ValueError(f"job_signature: batch size must be positive, got {batch_size}")
    canonical = json.dumps(
        {"model": model.strip().lower(), "batch_size": int(batch_size), "extra": dict(sorted((extra or {}).items()))},
        sort_keys=True,
        separators=(",", ":"),
    )
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:12]
    slug = re.sub(r"[^a-z0-9]+", "-", model.strip().lower()).strip("-")[:40] or "model"
    return f"{slug}-b{int(batch_size)}-{digest}"

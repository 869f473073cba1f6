"""Profiler tests share a small, busy CPU: one torch thread keeps timings steady (with two threads
on two loaded cores, spinning intra-op threads make a tiny probe 10-30x slower)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

"""Two example user jobs for ``python -m profiler.probe --entrypoint ...`` that differ only in their
loop pattern (Hops §3.5); the tests and the benchmark probe both and check the detected pattern.

* ``profiler.examples:overlapping_loop``: a DataLoader with a background worker that reads the next
  batch while the current one is computed (pattern 1: T_d hidden behind the computation).
* ``profiler.examples:prefetch_thread_loop``: the same overlap with a background thread that reads
  ahead (pattern 1; no hand-over between processes, so it stays clear on an overloaded CPU).
* ``profiler.examples:trainer_style_loop``: the same data read in the training process itself after
  the update, with a Hugging Face Trainer-style check that the gradients are finite right after the
  backward pass (pattern 2: the backward pass and update finish before the next batch is loaded).

Reading a batch costs ``LOAD_SECONDS_PER_BATCH`` of waiting (like reading from slow storage), so
the data time is real but does not compete with the computation for the CPU.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset

from profiler.job import ProbeJob

LOAD_SECONDS_PER_BATCH = 0.05
BATCH = 32
FEATURES = 512


class SlowStorageDataset(Dataset[tuple[Tensor, Tensor]]):
    """Synthetic batches; reading one blocks for ``load_seconds`` (simulated storage latency).

    Indexed by batch (use with ``DataLoader(batch_size=None)``): one read per batch, as from a
    sharded dataset, so the data time stays steady on a busy machine.
    """

    def __init__(self, batches: int = 64, load_seconds: float = LOAD_SECONDS_PER_BATCH) -> None:
        self.batches = batches
        self.load_seconds = load_seconds

    def __len__(self) -> int:
        return self.batches

    def __getitem__(self, i: int) -> tuple[Tensor, Tensor]:
        time.sleep(self.load_seconds)
        g = torch.Generator().manual_seed(i)
        return torch.randn(BATCH, FEATURES, generator=g), torch.randint(0, 10, (BATCH,), generator=g)


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(FEATURES, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10),
    )


def _job(name: str, loader: DataLoader[tuple[Tensor, Tensor]], after_backward: object = None) -> ProbeJob:
    model = _mlp()
    return ProbeJob(
        name=name, model=model, loader=loader, optimizer=torch.optim.SGD(model.parameters(), lr=0.01),
        loss_fn=nn.functional.cross_entropy, batch_size=BATCH, input_shape=(FEATURES,),
        after_backward=after_backward,  # type: ignore[arg-type]
    )


def overlapping_loop() -> ProbeJob:
    loader = DataLoader(SlowStorageDataset(), batch_size=None, num_workers=1, prefetch_factor=2,
                        persistent_workers=True)
    return _job("profiler.examples:overlapping_loop", loader)


class ThreadPrefetcher:
    """Loads up to ``depth`` batches ahead in a background thread (reading storage releases the GIL)."""

    def __init__(self, source: Iterable[Any], depth: int = 2) -> None:
        self.source, self.depth = source, depth

    def __iter__(self) -> Iterator[Any]:
        q: queue.Queue[Any] = queue.Queue(maxsize=self.depth)
        done = object()

        def fill() -> None:
            for item in self.source:
                q.put(item)
            q.put(done)

        threading.Thread(target=fill, daemon=True, name="prefetch").start()
        while (item := q.get()) is not done:
            yield item


def prefetch_thread_loop() -> ProbeJob:
    """Pattern 1 with a prefetching thread instead of a worker process (no inter-process hand-over)."""
    loader = ThreadPrefetcher(DataLoader(SlowStorageDataset(), batch_size=None, num_workers=0))
    return _job("profiler.examples:prefetch_thread_loop", loader)  # type: ignore[arg-type]


def _trainer_grad_check(model: nn.Module) -> None:
    """What HF Trainer does right after ``backward``: clip the gradient norm and insist it is finite."""
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e9, error_if_nonfinite=True)
    float(norm)  # reading it on the host synchronises with the device


def trainer_style_loop() -> ProbeJob:
    loader = DataLoader(SlowStorageDataset(), batch_size=None, num_workers=0)
    return _job("profiler.examples:trainer_style_loop", loader, _trainer_grad_check)

"""Running-mode recorder (Hops §3.2, §3.5): a few lines in a job's training loop record the data
time, the synchronisation wait and the throughput, appended as :class:`profiler.records.RuntimeRecord`
JSON lines to a metrics file that the engine ingests (:mod:`profiler.ingest`) into the store's
entity and type layers.

Usage (the engine sets ``HOPS_METRICS_FILE``, ``HOPS_JOB_SIGNATURE`` and ``HOPS_GPU_TYPE`` for jobs it
places; without ``HOPS_METRICS_FILE`` the recorder does nothing)::

    from profiler.runtime import Recorder

    rec = Recorder.from_env(batch_size=per_gpu_batch)
    for inputs, targets in rec.wrap(loader):     # times the wait for each batch
        with rec.step():                          # times the step; samples the sync wait
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    rec.close()

A job that resumes from a checkpoint passes its own sample count (``Recorder.from_env(batch_size=...,
done_samples=samples_in_checkpoint)``): each record then carries the count at its window's end
(``done_samples``), so the engine does not count twice the samples the job redoes after a restart.

The sync wait T_w is sampled every ``sync_every`` steps when torch.distributed is initialised: a
barrier at the end of the step takes as long as this process waits for the slowest one (the wait it
would otherwise spend inside the next all-reduce). Only rank 0 writes, unless the path contains
``{rank}``.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from profiler.records import RuntimeRecord

log = logging.getLogger(__name__)
T = TypeVar("T")


def _dist_info() -> tuple[bool, int, int]:
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is present wherever jobs run
        return False, 0, 1
    if dist.is_available() and dist.is_initialized():
        return True, dist.get_rank(), dist.get_world_size()
    return False, 0, 1


class Recorder:
    """Records running-mode measurements of one process of a job (see the module docstring)."""

    def __init__(
        self,
        path: Path | str | None,
        *,
        signature: str,
        gpu_type: str,
        batch_size: int,
        node: str | None = None,
        nodes: int = 1,
        flush_every: int = 100,
        sync_every: int = 10,
        done_samples: float | None = None,
    ) -> None:
        if batch_size <= 0 or flush_every <= 0 or sync_every <= 0:
            raise ValueError("batch_size, flush_every and sync_every must be positive")
        if done_samples is not None and not done_samples >= 0:
            raise ValueError("done_samples must be >= 0")
        #: the job's own count of samples done (None: not counted); each window adds its samples
        self.done_samples = None if done_samples is None else float(done_samples)
        self.signature, self.gpu_type, self.batch_size = signature, gpu_type, batch_size
        self.node = node or socket.gethostname()
        self.nodes, self.flush_every, self.sync_every = nodes, flush_every, sync_every
        self._distributed, self.rank, self.world_size = _dist_info()
        self._configured = path is not None  # the same on every rank: all of them measure (barriers are collective)
        self.path: Path | None = None  # where this rank writes; None on ranks other than 0 by default
        if path is not None:
            text = str(path)
            if "{rank}" in text:
                self.path = Path(text.format(rank=self.rank))
            elif self.rank == 0:
                self.path = Path(text)
        self.records_written = 0
        self._reset_window()

    @classmethod
    def from_env(cls, *, batch_size: int, **kwargs: Any) -> Recorder:
        """A recorder configured from the environment the engine gives a placed job."""
        env = os.environ
        nodes = int(env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES") or 1)
        return cls(
            env.get("HOPS_METRICS_FILE") or None,
            signature=env.get("HOPS_JOB_SIGNATURE", "unknown"),
            gpu_type=env.get("HOPS_GPU_TYPE", "unknown"),
            batch_size=batch_size,
            node=env.get("SLURMD_NODENAME") or None,
            nodes=nodes,
            **kwargs,
        )

    @property
    def enabled(self) -> bool:
        """Whether this recorder measures (a metrics path was given); every rank measures alike."""
        return self._configured

    def _reset_window(self) -> None:
        self._data: list[float] = []
        self._sync: list[float] = []
        self._steps: list[float] = []
        self._window_start: float | None = None

    def wrap(self, loader: Iterable[T]) -> Iterator[T]:
        """Yield ``loader``'s batches, timing how long each one is waited for."""
        if not self.enabled:
            yield from loader
            return
        it = iter(loader)
        clock = time.perf_counter
        while True:
            start = clock()
            if self._window_start is None:
                self._window_start = start
            try:
                batch = next(it)
            except StopIteration:
                return
            self._data.append(clock() - start)
            yield batch

    @contextmanager
    def step(self) -> Iterator[None]:
        """Time one training step; sample the sync wait; write a record every ``flush_every`` steps."""
        if not self.enabled:
            yield
            return
        start = time.perf_counter()
        if self._window_start is None:
            self._window_start = start
        yield
        self._steps.append(time.perf_counter() - start)
        if self._distributed and len(self._steps) % self.sync_every == 0:
            self._sync.append(self._barrier_wait())
        if len(self._steps) >= self.flush_every:
            self.flush()

    def _barrier_wait(self) -> float:
        import torch
        import torch.distributed as dist

        if torch.cuda.is_available() and dist.get_backend() == "nccl":
            torch.cuda.synchronize()
        start = time.perf_counter()
        dist.barrier()
        return time.perf_counter() - start

    def flush(self) -> RuntimeRecord | None:
        """Close the current window as one record and append it to this rank's file, if it has one.

        Returns the record (None when there is nothing to record).
        """
        if not self.enabled or not self._steps or self._window_start is None:
            return None
        window = max(time.perf_counter() - self._window_start, 1e-9)
        steps = len(self._steps)
        done = None if self.done_samples is None else self.done_samples + steps * self.batch_size * self.world_size
        self.done_samples = done  # the window's samples were processed, recorded or not
        try:
            record = RuntimeRecord(
                signature=self.signature, gpu_type=self.gpu_type, node=self.node, rank=self.rank,
                gpus=self.world_size, nodes=self.nodes, batch_size=self.batch_size, steps=steps,
                window_seconds=window, throughput=steps * self.batch_size * self.world_size / window,
                data_times=self._data[:steps], sync_waits=self._sync, step_times=self._steps, done_samples=done,
            )
        except ValueError as exc:  # out of the bounds the engine accepts: never stop the training loop for it
            log.warning("runtime recorder: window dropped (%s)", str(exc).splitlines()[0])
            self._reset_window()
            return None
        self._reset_window()
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(record.model_dump_json() + "\n")
            self.records_written += 1
        return record

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

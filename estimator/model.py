"""The Hops iteration-time model, eq. (1)-(5) of the paper (§3.5): pure functions on plain values.

Sits between the store (which holds the profiled time components, the data-time samples and the
per-type bandwidths) and :mod:`estimator.estimate` (which picks the layer and the configuration).

Units: times in seconds, parameter counts in parameters, bandwidths in parameters/s, batch size in
samples per GPU, throughput in samples/s per GPU.

Two terms beyond the paper, both zero by default (so the defaults are eq. 1-5 as printed), both needed
by Gavel's measured multi-GPU data (``docs/results/estimator.md``, "What eq. 1-2 miss"):

- a per-step **latency** in eq. (2) (:func:`comm_time`'s ``latency``): ring all-reduce takes N-1 steps
  per phase, each with a fixed start-up cost; the paper drops it ("we approximate it by considering only
  network bandwidth", §3.5), and without it cross-server communication cannot grow with N;
- a **straggler wait** for T_w (:func:`straggler_wait`): N synchronous processes wait each iteration for
  the slowest, so with per-process iteration times of spread ``sigma`` the expected wait is sigma times
  the expected maximum of N standard normals (0 for one process, 0.56 for 2, 1.03 for 4, 1.42 for 8).
  The paper names T_w ("synchronization waiting time caused by speed differences between processes")
  but gives no rule for a GPU count never run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from estimator.mixture import Mixture

#: The non-overlapped share of communication, T~_c = 0.2 * T_c (paper §3.5, "empirically set").
NON_OVERLAP_SHARE = 0.2


@dataclass(frozen=True)
class TimeComponents:
    """The stable components a profile measures once per (job, GPU type) (theoretical layer)."""

    t_f: float  # forward pass
    t_b: float  # backward pass
    t_u: float  # weight update
    pattern: int  # 1: BP overlaps data time and communication; 2: only communication overlaps
    params: float  # parameter count
    batch_size: int  # per-GPU batch

    def __post_init__(self) -> None:
        if self.pattern not in (1, 2):
            raise ValueError(f"pattern must be 1 or 2, got {self.pattern}")
        if min(self.t_f, self.t_b, self.t_u) < 0 or self.params < 0 or self.batch_size <= 0:
            raise ValueError(f"time components must be non-negative and batch size positive: {self}")


def comm_time(params: float, gpus: int, nodes: int, b_link: float, b_net: float, *,
              latency: float = 0.0) -> float:
    """Eq. (2): ring all-reduce ``params/B_link·(N−1)/N`` within one node, ``params/B_net`` across nodes,
    plus ``latency·(N−1)`` (seconds per ring step of the scope: the in-server one for one node, the
    cross-server one otherwise; 0 is the paper's eq. 2).

    One GPU communicates nothing (0 s). ``nodes`` is the node count of the configuration (d_n).
    """
    if not (math.isfinite(latency) and latency >= 0.0):
        raise ValueError(f"comm_time: latency must be a non-negative finite number, got {latency}")
    if gpus < 1 or nodes < 1 or nodes > gpus:
        raise ValueError(f"comm_time: need 1 <= nodes <= gpus, got gpus={gpus}, nodes={nodes}")
    if gpus == 1:
        return 0.0
    if nodes == 1:
        if b_link <= 0:
            raise ValueError(f"comm_time: B_link must be positive, got {b_link}")
        return params / b_link * (gpus - 1) / gpus + latency * (gpus - 1)
    if b_net <= 0:
        raise ValueError(f"comm_time: B_net must be positive, got {b_net}")
    return params / b_net + latency * (gpus - 1)


#: the largest process count :func:`expected_max_normal` integrates (beyond it the value grows as
#: sqrt(2 ln N) and is taken at this count: a cluster plan never spans more GPUs than this)
MAX_PROCESSES = 65536


@lru_cache(maxsize=256)
def expected_max_normal(n: int) -> float:
    """E[max of ``n`` independent standard normals] (0 for n = 1), by Simpson's rule on
    ``x · n φ(x) Φ(x)^(n-1)`` over [-12, 12]."""
    if n < 1:
        raise ValueError(f"expected_max_normal: need n >= 1, got {n}")
    if n == 1:
        return 0.0
    n = min(n, MAX_PROCESSES)
    steps, lo, hi = 4800, -12.0, 12.0
    h = (hi - lo) / steps
    total = 0.0
    for i in range(steps + 1):
        x = lo + i * h
        cdf = 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))
        f = x * n * math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi) * cdf ** (n - 1)
        total += f * (1 if i in (0, steps) else (4 if i % 2 else 2))
    return total * h / 3.0


def straggler_wait(sigma: float, gpus: int) -> float:
    """Expected T_w of ``gpus`` synchronous processes whose iteration times spread with standard
    deviation ``sigma`` (seconds): each waits for the slowest, sigma·E[max of N standard normals]."""
    if not (math.isfinite(sigma) and sigma >= 0.0):
        raise ValueError(f"straggler_wait: sigma must be a non-negative finite number, got {sigma}")
    return sigma * expected_max_normal(gpus)


def iter_time(pattern: int, *, t_d: float, t_f: float, t_b: float, t_u: float, t_c: float, t_w: float) -> float:
    """Eq. (1): one mini-batch's time for a given data time T_d and sync wait T_w.

    pattern 1: max(T_d, max(T_b + T~_c, T_c) + T_u) + T_f + T_w
    pattern 2: T_d + max(T_b + T~_c, T_c) + T_u + T_f + T_w, with T~_c = 0.2·T_c.
    """
    backward = max(t_b + NON_OVERLAP_SHARE * t_c, t_c) + t_u
    if pattern == 1:
        return max(t_d, backward) + t_f + t_w
    if pattern == 2:
        return t_d + backward + t_f + t_w
    raise ValueError(f"pattern must be 1 or 2, got {pattern}")


def expected_iter_time(tc: TimeComponents, data: Mixture, t_c: float, *, gpus: int) -> float:
    """Eq. (4): E[T_iter] = p_cache·E[T_iter | cache] + p_load·E[T_iter | load].

    Each conditional expectation evaluates eq. (1) at that component's mean data time and mean sync
    wait (the plug-in approximation). A single process has no peer to wait for: T_w = 0 when gpus == 1.
    """
    wc, wl = (data.wait_cache, data.wait_load) if gpus > 1 else (0.0, 0.0)
    common = dict(t_f=tc.t_f, t_b=tc.t_b, t_u=tc.t_u, t_c=t_c)
    cache = iter_time(tc.pattern, t_d=data.mu_cache, t_w=wc, **common)
    load = iter_time(tc.pattern, t_d=data.mu_load, t_w=wl, **common)
    return data.p_cache * cache + data.p_load * load


def throughput(batch_size: float, e_iter: float) -> float:
    """Eq. (5): per-GPU samples/s = batch_size / E[T_iter]."""
    if e_iter <= 0:
        raise ValueError(f"throughput: expected iteration time must be positive, got {e_iter}")
    return batch_size / e_iter


def per_gpu_theory_throughput(
    tc: TimeComponents, data: Mixture, *, gpus: int, nodes: int, b_link: float, b_net: float,
    latency_link: float = 0.0, latency_net: float = 0.0, straggler: float = 0.0,
) -> float:
    """Eq. (1)-(5) together: the theoretical layer's per-GPU throughput for ``gpus`` GPUs on ``nodes`` nodes.

    ``latency_link`` / ``latency_net``: eq. (2)'s per-step latency in / across servers (:func:`comm_time`);
    ``straggler``: the spread of one process's compute time (T_f + T_b + T_u) as a fraction of it, whose
    :func:`straggler_wait` is added to the measured T_w. All 0: eq. (1)-(5) as the paper gives them."""
    if not (math.isfinite(straggler) and straggler >= 0.0):
        raise ValueError(f"straggler must be a non-negative finite number, got {straggler}")
    t_c = comm_time(tc.params, gpus, nodes, b_link, b_net, latency=latency_link if nodes == 1 else latency_net)
    wait = straggler_wait(straggler * (tc.t_f + tc.t_b + tc.t_u), gpus) if straggler and gpus > 1 else 0.0
    return throughput(tc.batch_size, expected_iter_time(tc, data, t_c, gpus=gpus) + wait)

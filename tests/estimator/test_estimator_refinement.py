"""Online refinement (paper Fig. 7b): with a bimodal data loader, a short cold-cache profile misjudges
T_d; running-mode records move the estimates toward the truth, on measured and unmeasured configs."""

from __future__ import annotations

import numpy as np
import pytest

from estimator.estimate import Estimator
from estimator.model import comm_time
from estimator.store import ThroughputStore

T_F, T_B, T_U, PARAMS, BATCH = 0.02, 0.04, 0.005, 2e7, 64
B_LINK, B_NET = 1e10, 1e9
P_CACHE, CACHE, LOAD = 0.8, (0.005, 0.001), (0.08, 0.01)  # data time: cache hit / load from disk
WAIT_CACHE, WAIT_LOAD = (0.002, 0.0005), (0.03, 0.003)  # sync wait, conditioned on the same event


def _iterations(rng: np.random.Generator, n: int, gpus: int, nodes: int, hit: np.ndarray | None = None):
    """The job's real behaviour (pattern 2: data time is not overlapped)."""
    if hit is None:
        hit = rng.random(n) < P_CACHE
    d = np.where(hit, rng.normal(*CACHE, n), rng.normal(*LOAD, n)).clip(0)
    w = np.where(hit, rng.normal(*WAIT_CACHE, n), rng.normal(*WAIT_LOAD, n)).clip(0) if gpus > 1 else np.zeros(n)
    t_c = comm_time(PARAMS, gpus, nodes, B_LINK, B_NET)
    return d, w, d + max(T_B + 0.2 * t_c, t_c) + T_U + T_F + w


def _true_per_gpu(gpus: int, nodes: int) -> float:
    t_c = comm_time(PARAMS, gpus, nodes, B_LINK, B_NET)
    e_d = P_CACHE * CACHE[0] + (1 - P_CACHE) * LOAD[0]
    e_w = P_CACHE * WAIT_CACHE[0] + (1 - P_CACHE) * WAIT_LOAD[0] if gpus > 1 else 0.0
    return BATCH / (e_d + max(T_B + 0.2 * t_c, t_c) + T_U + T_F + e_w)


def test_error_shrinks_as_running_records_accumulate(tmp_path):
    rng = np.random.default_rng(2024)
    targets = [(1, 1), (2, 1), (4, 1), (2, 2)]  # (gpus, nodes); only (2, 1) is ever run
    truth = {t: _true_per_gpu(*t) for t in targets}
    with ThroughputStore(tmp_path / "t.db") as store:
        # Profile: 10 iterations on one GPU with a cold cache, so 8 of them load from disk.
        d, _, _ = _iterations(rng, 10, 1, 1, hit=np.array([False] * 8 + [True] * 2))
        store.put_theory("job", "v100", t_f=T_F, t_b=T_B, t_u=T_U, pattern=2, params=PARAMS, batch_size=BATCH,
                         data_samples=d.tolist(), sync_samples=[])
        store.put_calibration("v100", b_link=B_LINK, b_net=B_NET, method="synthetic", measured_at=0)
        est = Estimator(store, {"n1": ("v100", "n1"), "n2": ("v100", "n2")})

        def mean_error() -> float:
            errs = [abs(est.per_gpu_throughput("job", "v100", g, n, server="n1") - truth[(g, n)]) / truth[(g, n)]
                    for g, n in targets]
            return float(np.mean(errs))

        errors = {0: mean_error()}
        for k in range(1, 33):
            d, w, it = _iterations(rng, 40, 2, 1)  # one running-mode record: 40 iterations on {n1: 2}
            store.add_runtime_samples("job", "v100", "n1", data_times=d.tolist(), sync_waits=w.tolist(),
                                      gpus=2, nodes=1, throughput=2 * BATCH / float(it.mean()))
            if k in (4, 32):
                errors[k] = mean_error()
        snap = store.snapshot("job")

    assert errors[0] > 0.20  # the cold-cache profile is far off
    assert errors[32] < errors[4] < errors[0]
    assert errors[32] < 0.03
    m = snap.theory["v100"].data
    assert m.components == 2
    assert m.p_cache == pytest.approx(P_CACHE, abs=0.05)
    assert m.wait_load == pytest.approx(WAIT_LOAD[0], rel=0.1)

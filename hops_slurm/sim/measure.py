"""What the simulated cluster tells the production estimator: probe results, calibrations and runtime
records made from ground truth, in the record shapes the live profiler writes.

Data flow: a job arrives -> :func:`probe_result` (one :class:`profiler.records.ProbeResult` per GPU
type, as ``python -m profiler.probe`` writes it) -> :func:`profiler.ingest.ingest_probe` -> the
store's theoretical layer. A placed job runs -> every ``window`` seconds :func:`runtime_record` (a
:class:`profiler.records.RuntimeRecord`, as :mod:`profiler.runtime` appends to ``metrics/<job>/``)
-> :func:`profiler.ingest.ingest_runtime` (the function the live engine calls) -> the store's type and
entity layers. :func:`calibration` stands for ``hops-slurm calibrate``: B_link and B_net per GPU type.

How ground truth becomes time components (Gavel's data has only samples/s, no breakdown):

* one iteration on 1 GPU of the type (best server, speed 1.0) takes T = batch / samples/s, split
  T_f = 0.3 T, T_b = 0.6 T, T_u = 0.1 T; no data-loading time (pattern 1, T_d = 0); the parameter
  count is the model family's published one (:data:`PARAMS`).
* calibration: for each model, the communication time that makes eq. (1) give ground truth's 2-GPU
  throughput (one server: B_link; two servers: B_net), turned into a bandwidth with eq. (2); the
  median over the models (in log space) is the type's bandwidth (as an all-reduce benchmark measures
  the link, not one job), made physical by :func:`estimator.calibration.fit_physical` (B_link >= B_net,
  within the range the models showed). Models whose 2-GPU run scales perfectly or better tell nothing
  and are left out.

Nothing here knows a node's true speed except through the throughput it reports, as on a cluster.
"""

from __future__ import annotations

from datetime import datetime, timezone

from hops_slurm.sim.groundtruth import GroundTruth, batch_size, family
from estimator.calibration import fit_physical
from estimator.model import NON_OVERLAP_SHARE
from profiler.records import MAX_SECONDS, DataParallelPoint, ProbeResult, RuntimeRecord

#: parameter counts of the ground truth's model families (published sizes, rounded)
PARAMS = {
    "ResNet-50": 25_600_000,
    "ResNet-18": 11_700_000,
    "Transformer": 65_000_000,
    "LM": 33_000_000,
    "Recommendation": 60_000_000,
    "A3C": 1_000_000,
    "CycleGAN": 28_000_000,
}
SPLIT = (0.3, 0.6, 0.1)  # T_f, T_b, T_u as shares of one 1-GPU iteration
#: a bandwidth no model's measurements bound (params/s): communication costs next to nothing
UNBOUNDED_BANDWIDTH = 1.0e15


def params_of(model: str) -> int:
    return PARAMS.get(family(model), 25_000_000)


def signature_of(model: str, user: str) -> str:
    """The store key of a job: the owner and the program, as the live engine's ``<owner>/<hash>``
    (jobs of one owner running one model share what is learned about it)."""
    return f"{user or 'sim'}/{model}"


def _at(t: float) -> datetime:
    return datetime.fromtimestamp(t, tz=timezone.utc)


def probe_result(truth: GroundTruth, model: str, gpu_type: str, signature: str, *, at: float,
                 probe_seconds: float, data_parallel: tuple[int, ...] = ()) -> ProbeResult | None:
    """The probe of ``model`` on one GPU of ``gpu_type``; None where the model cannot run on that type. The
    probe names the model as a job's ``#HOPS model=`` directive does: the network (``'ResNet-50'``), its
    per-GPU batch size apart (``batch-size=``), so the variants of one network share a family
    (:func:`profiler.signature.family_signature`). ``data_parallel``: the GPU counts its data-parallel runs on
    the probe's node (``engine.probe_data_parallel``) measure, ground truth's consolidated figures."""
    thr = truth.samples_per_second(model, gpu_type, 1, False)
    if thr <= 0:
        return None
    b = batch_size(model)
    t = b / thr
    t_f, t_b, t_u = (share * t for share in SPLIT)
    return ProbeResult(
        model=family(model)[:256], source="zoo", signature=signature, gpu_type=gpu_type, device="cuda:0",
        node=f"profiler-{gpu_type}", batch_size=b, input_shape=(), params=params_of(model), iterations=1, warmup=0,
        t_data=0.0, t_forward=t_f, t_backward=t_b, t_update=t_u, t_iter_observed=t, t_wait_observed=0.0,
        data_samples=[], forward_samples=[t_f], backward_samples=[t_b], update_samples=[t_u], pattern=1,
        pattern_determined=False, pattern_margin=0.0, peak_memory_bytes=0, memory_source="cuda_max_allocated",
        timing="cuda_events", threads=0, torch_version="simulated", probe_seconds=min(probe_seconds, MAX_SECONDS),
        measured_at=_at(at),
        data_parallel=[DataParallelPoint(gpus=k, throughput=thr_k) for k in data_parallel
                       if (thr_k := truth.samples_per_second(model, gpu_type, k, False)) > 0],
    )


def _comm_time(t1: float, t2: float) -> float | None:
    """T_c that makes eq. (1) (pattern 1, T_d = 0) give a 2-GPU iteration of ``t2`` from a 1-GPU one of ``t1``."""
    t_f, t_b, t_u = (share * t1 for share in SPLIT)
    x = t2 - t_f - t_u  # = max(T_b + 0.2 T_c, T_c)
    if x <= t_b:
        return None
    cross = t_b / (1.0 - NON_OVERLAP_SHARE)
    return (x - t_b) / NON_OVERLAP_SHARE if x < cross else x


def calibration(truth: GroundTruth, gpu_type: str) -> tuple[float, float]:
    """(B_link, B_net) of ``gpu_type`` in parameters/s (see the module docstring)."""
    links: list[float] = []
    nets: list[float] = []
    for model in truth.models:
        one = truth.samples_per_second(model, gpu_type, 1, False)
        if one <= 0:
            continue
        t1 = batch_size(model) / one
        for spread, out in ((False, links), (True, nets)):
            two = truth.samples_per_second(model, gpu_type, 2, spread)
            if two <= 0:
                continue
            t_c = _comm_time(t1, batch_size(model) / (two / 2))
            if t_c is None or t_c <= 0:
                continue
            # eq. (2): one node, 2 GPUs: params / B_link * 1/2; two nodes: params / B_net
            out.append(params_of(model) * (0.5 if not spread else 1.0) / t_c)
    fit = fit_physical(links, nets)  # in-server at least cross-server, within what was measured
    return (fit.b_link if fit.b_link is not None else UNBOUNDED_BANDWIDTH,
            fit.b_net if fit.b_net is not None else UNBOUNDED_BANDWIDTH)


def runtime_record(signature: str, model: str, gpu_type: str, node: str, *, gpus: int, nodes: int,
                   throughput: float, window: float, at: float, done: float | None = None) -> RuntimeRecord:
    """One recorder window of a job running at ``throughput`` samples/s for about ``window`` seconds,
    ending at ``at``; ``done``: the job's own count of samples done then (as a resuming job's recorder
    reports it, :class:`profiler.runtime.Recorder`).

    The window is cut to whole steps (steps x batch x GPUs / window = throughput, as the recorder's
    records are). A job that makes no progress there (ground truth has no measurement: the model does
    not fit) reports the most the recorder could have seen: one step in the longest window it accepts.
    """
    b = batch_size(model)
    if throughput <= 0:
        steps, seconds = 1, MAX_SECONDS
    else:
        steps = max(1, round(throughput * min(window, MAX_SECONDS) / (b * gpus)))
        seconds = steps * b * gpus / throughput
        if seconds > MAX_SECONDS:
            steps = max(1, int(throughput * MAX_SECONDS / (b * gpus)))
            seconds = min(steps * b * gpus / throughput, MAX_SECONDS)
    return RuntimeRecord(
        signature=signature, gpu_type=gpu_type, node=node, rank=0, gpus=gpus, nodes=nodes, batch_size=b,
        steps=steps, window_seconds=seconds, throughput=steps * b * gpus / seconds, data_times=[],
        sync_waits=[], step_times=[], measured_at=_at(at), done_samples=None if done is None else max(done, 0.0),
    )

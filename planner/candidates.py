"""Candidate configs with their gains: what a planning's solve chooses from (eq. 11's G).

Used by :mod:`planner.hops` (its ``candidates`` stage and backfill) after the window and node classes and
before the weights and the solve; configs come from :mod:`planner.configs`, the prices of a running job's
moves from :mod:`planner.moves`. Each compact candidate carries its signature on the planning's nodes
(:func:`planner.signatures.signature_on`), worked out here once for the solve and its fallbacks to reuse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from operator import lt

from planner.configs import SpanIndex, generate_configs
from planner.moves import current_rate, move_price
from planner.signatures import Candidate, Signature, signature
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config


def candidates_for(jobs: Sequence[JobView], cluster: ClusterView, sigma: float, *,
                   compact: bool = False, restart_penalty: float = 0.0, priced: bool = False,
                   preempt_penalty: float = 0.0, spans: str = "every") -> list[Candidate]:
    """Every window job's configs with their gains G = throughput / the job's smallest candidate
    throughput; configs with zero throughput are dropped. ``compact``: one config per node-class
    signature (what the compact ILP uses), so throughput is asked once per signature.
    ``priced`` (a round plan; False = the paper's eq. 11 as printed): a running job's candidates other than
    its current config (compact: its current signature) are moves, worth the rate they achieve over the
    job's remaining work with its restart and lost work paid (:func:`planner.moves.move_price`), dropped
    when they do not pay, and keep (1 - ``restart_penalty``) of that gain; every candidate of a running job
    is worth (1 + ``preempt_penalty``) of its gain, the price of leaving it out for a waiting job.
    ``spans`` (compact only; the plain model always takes every span): :data:`planner.configs.SPAN_RULES`."""
    out: list[Candidate] = []
    nodes = cluster.nodes
    by_name = {n.name: n for n in nodes}
    index = SpanIndex(cluster) if compact and spans == "bucketed" else None
    known = _SignatureMemo(by_name)
    made = Candidate.made
    for job in jobs:
        configs = generate_configs(job, cluster, sigma, one_per_class=compact,
                                   spans=spans if compact else "every", index=index)
        sigs: list[Signature | None]
        if compact:  # one config per signature: the first, or the current config for its own
            firsts: dict[Signature, Config] = {}
            seen = known.seen
            for cfg in configs:
                hit = seen.get(id(cfg))  # (known(cfg), its lookup inlined)
                firsts.setdefault(known(cfg) if hit is None else hit[1], cfg)
            if job.current and freeze_config(job.current) in configs:  # the current config stands for its signature
                firsts[signature(job.current, by_name)] = freeze_config(job.current)
            sigs, configs = list(firsts), list(firsts.values())
        else:
            sigs = [None] * len(configs)
        throughput = job.throughput
        on = nodes if compact else None
        thrs = list(map(float, map(throughput, configs)))
        if thrs and not job.current and all(map(lt, repeat(0.0), thrs)):
            # a waiting job whose every config is estimated above 0 (the usual case): its candidates in one go,
            # the same as below (C loops: hundreds of thousands at 16,384 GPUs)
            low = min(thrs)
            out.extend(map(made, repeat(job.job_id), configs, [thr / low for thr in thrs], sigs, repeat(on)))
            continue
        rated = [(sig, cfg, thr) for sig, cfg, thr in zip(sigs, configs, thrs, strict=True) if thr > 0.0]
        if not rated:
            continue
        low = min(thr for _, _, thr in rated)
        if job.current and priced and all(n in by_name for n in job.current):
            # a running job: its current config (compact: its signature) at its gain, every other config a
            # move priced by what it costs this job (planner.moves); moves that do not pay are dropped
            cur_sig = signature(freeze_config(job.current), by_name) if compact else None
            same = (lambda sig, cfg: sig == cur_sig) if compact \
                else (lambda sig, cfg, cur=dict(job.current): dict(cfg) == cur)
            # every placement of a running job is worth (1 + preempt_penalty): leaving it out of the plan (a
            # preemption for a waiting job) must gain that much more; its moves compete with staying as before
            rate_now, keep = current_rate(job), 1.0 + preempt_penalty
            for sig, cfg, thr in rated:
                if same(sig, cfg):
                    out.append(Candidate(job.job_id, cfg, thr / low * keep, sig, on))
                    continue
                worth = move_price(job, rate_now, thr).rate
                if worth > 0.0:
                    out.append(Candidate(job.job_id, cfg, worth / low * (1.0 - restart_penalty) * keep, sig, on))
        else:
            job_id = job.job_id
            out.extend([made(job_id, cfg, thr / low, sig, on) for sig, cfg, thr in rated])
    return out


class _SignatureMemo:
    """Signatures of configs on one cluster, each config object's worked out once: the single-node configs
    of a view (:func:`planner.configs.aggregated_of`) and the spans of jobs whose classes order alike
    (:meth:`planner.configs.SpanIndex.spans`) are the same objects for many jobs. Holds the configs it has
    seen, so an ``id`` is never reused while it is remembered."""

    def __init__(self, by_name: Mapping[str, NodeView]) -> None:
        self.by_name = by_name
        self.seen: dict[int, tuple[Config, Signature]] = {}

    def __call__(self, cfg: Config) -> Signature:
        hit = self.seen.get(id(cfg))
        if hit is not None:
            return hit[1]
        sig = signature(cfg, self.by_name)
        self.seen[id(cfg)] = (cfg, sig)
        return sig

"""Growth discount: in a saturated planning, GPUs above a job's smallest count are worth less than starting a job.

Where it sits: the ``weights`` stage of :class:`planner.hops.HopsPolicy` (parameter ``growth_discount``, 0.5
by default; 0 = off), after the candidates (:mod:`planner.candidates`), before the ILP. Pure: it reads the
candidates' gains and configs and the cluster's node types.

Why (docs/results/requeues.md, "Where the wait is"): eq. 11's gain is a config's throughput over the job's
slowest candidate's, so a job's start is worth about 1 while the speed-up of an elastic job from 1 to 4 GPUs
is worth 2-3 more. Under saturation the ILP therefore spends GPUs on narrow jobs above their smallest counts
(75-87 GPUs of 512 on Table 4 from 2 h to 5 h, most of them on jobs expected to run 2 h or more) while wide
jobs wait: those waits are most of the average wait. With ``growth_discount`` = d in (0, 1), when the
planned jobs' smallest demands exceed the free GPUs (:func:`planner.jct_gain.saturated`), each candidate's
gain above the gain of its job's smallest-count candidates on the same GPU type counts only (1 - d) of
itself: the GPU type a job gets keeps its full worth, the extra GPUs lose some, and a start keeps its.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from planner.signatures import Candidate
from planner.views import config_gpus


def _kind(config: Mapping[str, int], type_of: Mapping[str, str]) -> tuple[str, ...]:
    """The GPU types of a config's nodes (one, for every config the planner makes)."""
    return tuple(sorted({type_of.get(n, "") for n in config}))


def discount_growth(cands: Sequence[Candidate], type_of: Mapping[str, str], discount: float) -> list[Candidate]:
    """``cands`` with each candidate's gain above its base multiplied by (1 - ``discount``). A candidate's base
    is the largest gain among its job's candidates of the fewest GPUs on the same GPU type(s)
    (``type_of``: node name -> GPU type); candidates at that count, or not above their base, are unchanged."""
    if discount <= 0.0:
        return list(cands)
    fewest: dict[tuple[str, tuple[str, ...]], int] = {}
    for c in cands:
        key = (c.job_id, _kind(c.config, type_of))
        g = config_gpus(c.config)
        if g < fewest.get(key, g + 1):
            fewest[key] = g
    base: dict[tuple[str, tuple[str, ...]], float] = {}
    for c in cands:
        key = (c.job_id, _kind(c.config, type_of))
        if config_gpus(c.config) == fewest[key]:
            base[key] = max(base.get(key, 0.0), c.gain)
    out: list[Candidate] = []
    for c in cands:
        key = (c.job_id, _kind(c.config, type_of))
        low = base[key]
        if config_gpus(c.config) > fewest[key] and c.gain > low:
            out.append(Candidate.made(c.job_id, c.config, low + (1.0 - discount) * (c.gain - low), c.sig, c.on))
        else:
            out.append(c)
    return out


__all__ = ["discount_growth"]

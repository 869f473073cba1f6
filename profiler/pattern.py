"""Which of the paper's two loop patterns a training loop follows (Hops §3.5, eq. 1).

Our reading of the paper. Per iteration, T_d is the data time (loading and processing one batch),
T_f / T_b / T_u the forward, backward and update times, T_c the communication time, T~_c = 0.2 T_c
its part not hidden behind the backward pass, T_w the wait for slower processes. Eq. 1:

* **Pattern 1** overlaps data with computation: the next batch is loaded while the backward pass and
  the update run (a prefetching loader, or a loop that fetches while the GPU still works), so
  T_iter = max(T_d, max(T_b + T~_c, T_c) + T_u) + T_f + T_w.
* **Pattern 2** overlaps only computation and communication: the loop finishes the backward pass
  (and update) before it loads the next batch, as in Hugging Face's Trainer, whose check of the
  gradients for inf/NaN synchronises right after the backward pass. So
  T_iter = T_d + max(T_b + T~_c, T_c) + T_u + T_f + T_w.

Detection (single process, so T_c = T_w = 0): the probe measures T_d of the loader alone and
T_f, T_b, T_u with every phase synchronised, then runs the loop free-running and measures its real
iteration time T_obs. Eq. 1 predicts P1 = max(T_d, T_b + T_u) + T_f and P2 = T_d + T_b + T_u + T_f;
the loop follows the pattern whose prediction T_obs is closer to (T_obs < (P1 + P2) / 2 -> 1).
On a GPU, T_f, T_b, T_u come from CUDA events. On the CPU the main process cannot overlap its own
computation with anything, so the probe takes the computation from the same free-running iterations
(their time outside the wait for data) and only the split into T_f / T_b / T_u from the synchronised
phase; then the test reads "was at least half of the overlappable data time hidden", and it is immune
to a busy machine changing speed between phases.
When the two predictions differ by less than ``min_margin`` of P2 (T_d negligible next to the
computation), measurement cannot tell them apart; both give the same T_iter then, and we report
pattern 1 marked as not determined.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PatternVerdict:
    pattern: int  # 1 or 2
    determined: bool
    margin: float  # (P2 - P1) / P2
    p1: float
    p2: float


def detect_pattern(
    t_data: float, t_forward: float, t_backward: float, t_update: float, t_observed: float, *, min_margin: float = 0.05
) -> PatternVerdict:
    """Classify a loop from its measured components and its free-running iteration time."""
    p1 = max(t_data, t_backward + t_update) + t_forward
    p2 = t_data + t_backward + t_update + t_forward
    margin = (p2 - p1) / p2 if p2 > 0 else 0.0
    if margin < min_margin:
        return PatternVerdict(1, False, margin, p1, p2)
    return PatternVerdict(1 if t_observed < (p1 + p2) / 2 else 2, True, margin, p1, p2)

"""Toy clusters and throughput functions that the planner's move and fragment tests share.

Two nodes of four GPUs, a slow type and a fast one (``SLOW_FAST``), or one node (``ONE_NODE``); rates:
:func:`by_node` (3x on the fast node, single-node configs only), :func:`by_count` (the same per GPU on
either type, single-node configs only), :func:`linear` (one sample/s per GPU anywhere).
"""

from __future__ import annotations

from planner.views import ClusterView, Config, NodeView

SLOW_FAST = ClusterView((NodeView("slow", "k80", "S", 4, 4), NodeView("fast", "v100", "F", 4, 4)))
ONE_NODE = ClusterView((NodeView("n0", "t", "A", 4, 4),))


def by_node(cfg: Config) -> float:
    """1 sample/s per GPU on the slow node, 3 on the fast one; single-node configs only."""
    if len(cfg) != 1:
        return 0.0
    (n, g), = cfg.items()
    return g * (3.0 if n == "fast" else 1.0)


def by_count(cfg: Config) -> float:
    """The same rate per GPU on either type: the slow node is as good as the fast one."""
    return float(sum(cfg.values())) if len(cfg) == 1 else 0.0


def linear(cfg: Config) -> float:
    """One sample/s per GPU, wherever they are."""
    return float(sum(cfg.values()))

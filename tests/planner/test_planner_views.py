"""Cluster views redrawn (planner/views.py): the one place a view's free GPUs change."""

from __future__ import annotations

from planner.views import ClusterView, NodeView


def test_the_idle_view_frees_every_gpu_and_keeps_the_nodes() -> None:
    busy = ClusterView((NodeView("a", "v100", "v100", 8, 3), NodeView("b", "k80", "k80-x", 4, 0)))
    idle = busy.idle()
    assert [(n.name, n.gpu_type, n.server_class, n.total_gpus, n.free_gpus) for n in idle.nodes] == \
        [("a", "v100", "v100", 8, 8), ("b", "k80", "k80-x", 4, 4)]
    assert busy.free_gpus == 3  # the view it came from is unchanged
    assert busy.with_free(lambda n: n.free_gpus - 1 if n.free_gpus else 0).free_gpus == 2

"""Clear minicluster errors: not root, ports taken (checked before anything is started)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from hops_slurm.errors import MiniclusterError
from hops_slurm.tools.minicluster.cluster import Minicluster
from slurm_helpers import load_test_spec
from tests_paths import DATA

pytestmark = pytest.mark.slurm


def test_ports_taken_is_named_and_nothing_starts(tmp_path: Path) -> None:
    spec = load_test_spec(DATA / "minicluster-lifecycle.toml").model_copy(update={"state_dir": tmp_path / "mc"})
    cluster = Minicluster(spec)
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("0.0.0.0", spec.ports.slurmctld))
        holder.listen()
        with pytest.raises(MiniclusterError, match=f"slurmctld port {spec.ports.slurmctld}"):
            cluster.up()
    assert cluster.registry.load() == {}


def test_not_root_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    spec = load_test_spec(DATA / "minicluster-lifecycle.toml").model_copy(update={"state_dir": tmp_path / "mc"})
    os.seteuid(65534)  # really drop to nobody for the call (we are root, so we can come back)
    try:
        with pytest.raises(MiniclusterError, match="run `hops-slurm minicluster up` as root"):
            Minicluster(spec).up()
    finally:
        os.seteuid(0)

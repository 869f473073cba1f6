"""Root writes nothing into a state directory another user owns or can write (docs/security.md, "Root's
writes"): the lock (``O_CREAT`` then truncated), the heartbeat, the log and the databases go there by name,
so a link planted there would truncate, create or append to any file as root. The engine and the lock
refuse such a directory with one line and touch nothing through it; a fresh one is created 0711."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hops_slurm.config import parse_config
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.lock import InstanceLock
from hops_slurm.errors import HopsError
from standin import StandInSlurm

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")


def _planted(state: Path, victim: Path) -> None:
    # the files named by [paths] keys are refused by the config check when they lead outside; these are not
    for name in ("engine.lock", "heartbeat", "engine.log"):
        (state / name).symlink_to(victim)


@pytest.mark.parametrize("how", ["another owner", "group-writable", "world-writable"])
def test_a_state_dir_others_own_or_can_write_is_refused_and_nothing_is_written_through_it(tmp_path: Path, how: str) -> None:
    state = tmp_path / "state"
    state.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    _planted(state, victim)
    if how == "another owner":
        os.chown(state, 12345, 12345)
    state.chmod({"another owner": 0o755, "group-writable": 0o775, "world-writable": 0o1777}[how])
    with pytest.raises(HopsError, match=r"\[paths\] state_dir: .*must belong to uid 0 and be writable by no one else"):
        InstanceLock(state / "engine.lock").acquire()
    with pytest.raises(HopsError, match=r"state_dir"):  # the config check (world-writable) or the engine
        Engine(parse_config({"paths": {"state_dir": str(state)}}), api=StandInSlurm()).open()
    assert victim.read_text() == "precious\n"


def test_a_fresh_state_dir_is_created_roots_own_and_searchable(tmp_path: Path) -> None:
    state = tmp_path / "new" / "state"
    lock = InstanceLock(state / "engine.lock").acquire()
    try:
        st = state.stat()
        assert st.st_uid == 0 and st.st_mode & 0o022 == 0 and st.st_mode & 0o011 == 0o011
    finally:
        lock.release()

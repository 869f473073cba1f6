"""The permissions docs/security.md states are the ones the code sets: its "Permissions" table, row by row,
against the mode bits and owners of what :mod:`hops_slurm.engine.userfiles` and the job environment files
(:func:`hops_slurm.slurm.enact.write_job_env`) create. No root needed: the job's owner is this user."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from hops_slurm.engine.userfiles import Owner, make_place, make_root
from hops_slurm.slurm.enact import write_job_env

DOC = Path(__file__).resolve().parents[3] / "docs" / "security.md"
ME = Owner("me", os.getuid(), os.getgid())


def documented() -> dict[str, tuple[str, int]]:
    """``path -> (owner, mode)`` from the table under "## Permissions" in docs/security.md."""
    section = DOC.read_text().split("## Permissions", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| ([^|]+?) \| (0[0-7]{3}) \|", section, flags=re.M)
    return {path: (owner.strip(), int(mode, 8)) for path, owner, mode in rows}


def test_the_documented_modes_are_the_modes_the_code_sets(tmp_path: Path) -> None:
    table = documented()
    assert set(table) == {"<state_dir>/metrics/", "<state_dir>/metrics/<job>/", "<probe_dir>/", "<probe_dir>/<job>/",
                          "<env_dir>/", "<env_dir>/<job>.env"}, table
    metrics, probes, env = tmp_path / "metrics", tmp_path / "probes", tmp_path / "jobs"
    (metrics / "stale").mkdir(parents=True)
    metrics.chmod(0o777)  # a parent left too open (an older release, an administrator) is closed again
    made = {"<state_dir>/metrics/": make_root(metrics), "<state_dir>/metrics/<job>/": make_place(metrics, "42", ME),
            "<probe_dir>/<job>/": make_place(probes, "42", ME), "<probe_dir>/": probes,
            "<env_dir>/<job>.env": write_job_env(env, "42", {"HOPS_GPUS": "2"}), "<env_dir>/": env}
    for key, path in made.items():
        st = os.stat(path)
        owner, mode = table[key]
        assert stat.S_IMODE(st.st_mode) == mode, (key, oct(stat.S_IMODE(st.st_mode)))
        assert st.st_uid == (ME.uid if owner == "the job's owner" else os.geteuid()), key

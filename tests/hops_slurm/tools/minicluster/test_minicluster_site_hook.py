"""The spec key ``site_hook``: a site's own job_submit.lua, found relative to the spec, kept across releases,
and a missing one named on one line (installing it is shown live: tests/hops_slurm/site/test_site_live.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.errors import MiniclusterError
from hops_slurm.tools.minicluster.spec import load_spec
from tests.tests_paths import DATA


def test_the_site_hook_is_found_beside_the_spec_and_kept_on_another_release() -> None:
    spec = load_spec(DATA / "minicluster-site.toml")
    assert spec.site_hook == (DATA / "site" / "job_submit.lua").absolute() and spec.site_hook.is_file()
    assert load_spec(DATA / "minicluster-site.toml", slurm="26.05").site_hook == spec.site_hook
    assert load_spec(DATA / "minicluster-test.toml").site_hook is None


def test_a_missing_site_hook_is_one_line(tmp_path: Path) -> None:
    text = (DATA / "minicluster-site.toml").read_text().replace('site_hook = "site/job_submit.lua"',
                                                                 'site_hook = "nowhere/job_submit.lua"')
    (tmp_path / "spec.toml").write_text(text)
    with pytest.raises(MiniclusterError, match=r"site_hook .*/nowhere/job_submit.lua is not a file$"):
        load_spec(tmp_path / "spec.toml")

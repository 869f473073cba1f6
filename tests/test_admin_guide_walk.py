"""The admin guide's install path stays walked (issue 33): every code block of docs/admin-guide.md's sections
"Install", "The submit hook", "Hops partitions", "Enable" and "Leaving Hops" carries a ``<!-- walk: ID -->``
marker and is either walked by the live test (tests/hops_slurm/site/test_admin_guide_live.py) or listed in
tests/docs_walk.py as not walkable here, with the reason. A command added to the guide without being walked
fails here, without a cluster."""

from __future__ import annotations

import re

from tests.docs_walk import GUIDE, HOST_ONLY, NOT_WALKED, SECTIONS, WALKED, blocks

LIVE = GUIDE.parents[1] / "tests" / "hops_slurm" / "site" / "test_admin_guide_live.py"


def test_the_sections_exist_and_have_blocks() -> None:
    text = GUIDE.read_text()
    for section in SECTIONS:
        assert f"\n## {section}\n" in text, section
    assert {b.section for b in blocks()} == set(SECTIONS)


def test_every_block_is_marked_and_the_markers_are_unique() -> None:
    found = blocks()
    unmarked = [b.lines[:2] for b in found if b.id is None]
    assert not unmarked, f"code blocks without a <!-- walk: ID --> marker: {unmarked}"
    ids = [b.id for b in found]
    assert len(ids) == len(set(ids)), ids


def test_every_block_is_walked_or_listed_with_its_reason() -> None:
    ids = {b.id for b in blocks()}
    assert not set(WALKED) & set(NOT_WALKED)
    assert ids == set(WALKED) | set(NOT_WALKED), (
        f"in the guide, listed nowhere: {sorted(ids - set(WALKED) - set(NOT_WALKED))}; "
        f"listed, not in the guide: {sorted((set(WALKED) | set(NOT_WALKED)) - ids)}")
    assert all(reason.strip() for reason in NOT_WALKED.values())


def test_each_walked_block_is_walked_by_the_live_test() -> None:
    live = LIVE.read_text()
    for block_id in WALKED:
        assert re.search(rf"""(walk\.run|walk\.block)\("{block_id}"[,)]""", live), block_id


def test_host_only_lines_are_the_guides_and_the_live_test_has_an_equivalent_for_each() -> None:
    walked = [line for b in blocks() if b.id in WALKED for line in b.commands()]
    host = [line for line in walked if re.match(r"(systemctl|journalctl)\b", line)]
    assert sorted(set(host)) == sorted(HOST_ONLY), "a systemctl/journalctl line of a walked block needs an equivalent"
    live = LIVE.read_text()
    for line in HOST_ONLY:
        assert f'"{line}"' in live, line


def test_the_marker_finder_sees_an_unmarked_block() -> None:
    text = "## Install\n\n<!-- walk: a -->\n\n    echo a\n\nprose\n\n    echo b\n\n```lua\nx = 1\n```\n## Other\n\n    echo c\n"
    assert [(b.id, b.lines) for b in blocks(text)] == [("a", ("echo a",)), (None, ("echo b",)), (None, ("x = 1",))]

"""hops_slurm.text: user text is escaped before it is printed or logged."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from hops_slurm.errors import HopsError
from hops_slurm.text import EscapingFormatter, id_list, printable, read_utf8


@pytest.mark.parametrize(("raw", "shown"), [
    ("job\nINFO fake line", "job\\nINFO fake line"), ("\x1b[31mred", "\\x1b[31mred"), ("a\rb", "a\\rb"),
    ("\u202eevil", "\\u202eevil"), ("nel\x85", "nel\\x85"), ("bad\udcff", "bad\\udcff"), ("ünïcødé ok", "ünïcødé ok"),
])
def test_printable_escapes_what_could_forge_or_hide_output(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_log_records_are_escaped() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "job %s ended", ("a\nb\x1b[2J",), None)
    assert EscapingFormatter("%(message)s").format(record) == "job a\\nb\\x1b[2J ended"


def test_read_utf8_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "w.toml"
    bad.write_bytes(b"ok\xff")
    with pytest.raises(HopsError, match="w.toml: not UTF-8 text \\(byte 3\\)"):
        read_utf8(bad, "workload")
    with pytest.raises(HopsError, match="not a regular file"):
        read_utf8(tmp_path, "workload")


def test_id_list_is_bounded_for_long_queues() -> None:
    assert id_list([]) == "[]"
    assert id_list(["1", "2"]) == "[1, 2]"
    long = id_list([str(i) for i in range(10000)])
    assert long.startswith("[0, 1, 2,") and long.endswith(", 19, ... 9980 more]")
    assert len(long) < 200

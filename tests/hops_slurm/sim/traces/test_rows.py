"""Bounded CSV reading shared by the trace importers: sizes capped, bad rows named by line."""

import pytest

from hops_slurm.errors import HopsError
from hops_slurm.sim.traces.rows import MAX_FIELD, MAX_SHOWN, RowErrors, number, read_rows


def test_rows_keep_their_line_numbers_and_skip_blank_lines(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n\n3,\n")
    assert read_rows(path, "table", ("a", "b"), max_rows=10) == [(2, {"a": "1", "b": "2"}), (4, {"a": "3"})]


def test_sizes_are_bounded(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a\n" + "1\n" * 11)
    with pytest.raises(HopsError, match="more than 10 rows"):
        read_rows(path, "table", ("a",), max_rows=10)
    path.write_text("a\n" + "x" * (MAX_FIELD + 1) + "\n")
    with pytest.raises(HopsError, match=f"t.csv:2: a field longer than {MAX_FIELD} characters"):
        read_rows(path, "table", ("a",), max_rows=10)
    path.write_text("a\n" + "1\n" * 100)
    with pytest.raises(HopsError, match="larger than 50 bytes"):
        read_rows(path, "table", ("a",), max_rows=1000, limit=50)


def test_many_bad_rows_are_shown_up_to_a_limit(tmp_path):
    errors = RowErrors(tmp_path / "t.csv")
    for line in range(MAX_SHOWN + 5, 1, -1):
        errors.add(line, "bad")
    with pytest.raises(HopsError) as err:
        errors.raise_if_any()
    lines = str(err.value).splitlines()
    assert lines[1].endswith("t.csv:2: bad") and len(lines) == 1 + MAX_SHOWN + 1
    assert lines[-1].strip() == "... and 4 more bad rows"


def test_numbers_are_finite_and_in_range():
    assert number({"x": "3"}, "x", high=5, integer=True) == 3.0
    for text, message in (("nan", "must be in"), ("inf", "must be in"), ("9", "must be in"), ("2.5", "whole number"),
                          ("0x10", "must be a number")):
        with pytest.raises(ValueError, match=message):
            number({"x": text}, "x", high=5, integer=True)
    with pytest.raises(ValueError, match="missing 'x'"):
        number({}, "x")

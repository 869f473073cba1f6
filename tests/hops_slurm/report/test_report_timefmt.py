"""Slurm time formats: parsing -S/-E and windows, printing instants and elapsed times."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hops_slurm.report.timefmt import TimeFormatError, format_elapsed, format_time, parse_duration, parse_time

NOW = datetime(2026, 11, 22, 5, 50, 0, tzinfo=UTC).timestamp()


def _utc(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-20", _utc(2026, 11, 20)),
        ("2026-11-20T13:05", _utc(2026, 11, 20, 13, 5)),
        ("2026-11-20T13:05:09", _utc(2026, 11, 20, 13, 5, 9)),
        ("11/20", _utc(2026, 11, 20)),
        ("11/20/25", _utc(2025, 11, 20)),
        ("11/20-08:30", _utc(2026, 11, 20, 8, 30)),
        ("11.20.2025", _utc(2025, 11, 20)),
        ("1120", _utc(2026, 11, 20)),
        ("112025", _utc(2025, 11, 20)),
        ("now", NOW),
        ("now-2hours", NOW - 7200),
        ("now-30minutes", NOW - 1800),
        ("now-3days", NOW - 3 * 86400),
        ("now+90", NOW + 90),
        ("today", _utc(2026, 11, 22)),
        ("midnight", _utc(2026, 11, 22)),
        ("noon", _utc(2026, 11, 22, 12)),
        ("teatime", _utc(2026, 11, 22, 16)),
        ("tomorrow", _utc(2026, 11, 23)),
        ("07:15", _utc(2026, 11, 22, 7, 15)),
        ("04:00", _utc(2026, 11, 23, 4, 0)),  # already past today: tomorrow, as Slurm does
        ("6:00 PM", _utc(2026, 11, 22, 18, 0)),
        ("@3600", 3600.0),
    ],
)
def test_parse_time_accepts_slurm_forms(text: str, expected: float) -> None:
    assert parse_time(text, NOW, UTC) == expected


@pytest.mark.parametrize("text", ["", "yesterday-ish", "2026-13-01", "now-3fortnights", "25:00 PM", "@x"])
def test_parse_time_rejects_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(TimeFormatError):
        parse_time(text, NOW, UTC)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("24h", 86400), ("90m", 5400), ("2d", 172800), ("3600", 3600), ("45s", 45), ("1w", 604800),
     ("1-02:00:00", 93600), ("02:30", 150), ("00:01:05", 65), ("1-12", 129600), ("1-00:30", 88200)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_parse_duration_rejects_garbage() -> None:
    with pytest.raises(TimeFormatError, match="24h"):
        parse_duration("a day")


def test_format_time_and_elapsed() -> None:
    assert format_time(NOW, UTC) == "2026-11-22T05:50:00"
    assert format_time(None) == "Unknown"
    assert format_elapsed(0) == "00:00:00"
    assert format_elapsed(3725) == "01:02:05"
    assert format_elapsed(2 * 86400 + 3600 + 1) == "2-01:00:01"
    assert format_elapsed(None) == ""

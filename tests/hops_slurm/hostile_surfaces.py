"""Cases of the hostile CLI suite (``test_hostile.py``) for the surfaces added since the first suite (issue 24):
deeply nested TOML, path keys that lead out of the state directory, hostile what-if exports (with ``--out``:
no file it writes may hold a raw escape), and read-only commands on databases that are not theirs (the
folder of each must be left byte for byte as it was)."""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]")
_TEXT = {".md", ".json", ".jsonl", ".csv", ".txt", ".toml"}
T0 = 1_767_225_600


@dataclass
class Case:
    name: str
    argv: list[str]
    refuse: bool | None  # True: refused (exit != 0) with an error line containing `names`; None: either way
    names: str = ""
    watch: Path | None = None  # a read-only command: this folder must be left as it was, byte for byte
    out: Path | None = None  # the command writes files here: none of its text files may hold a raw escape


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def raw_text_files(folder: Path) -> list[str]:
    """The text files under ``folder`` holding a raw control character, escape or bidi override."""
    if not folder.is_dir():
        return []
    return [str(p.relative_to(folder)) for p in folder.rglob("*")
            if p.is_file() and p.suffix in _TEXT and _RAW.search(p.read_text(encoding="utf-8", errors="replace"))]


def _toml(tmp: Path) -> list[Case]:
    deep = {"inline-arrays": "[paths]\nx = [{a = " + "[" * 40 + "]" * 40 + "}]\n",
            "header-parts": "[" + ".".join(["scheduler"] * 33) + "]\nround_length = 1\n",
            "inline-in-array": "planner = [" + "{a=[" * 20 + "]}" * 20 + "]\n",
            "dotted-value-key": "[scheduler]\n" + ".".join(f"k{i}" for i in range(50)) + " = 1\n",
            "comment-does-not-count": "# " + "[" * 100000 + "\n[scheduler\n"}
    cases = []
    for name, text in deep.items():
        p = tmp / f"deep-{name}.toml"
        p.write_text(text)
        needle = "not valid TOML" if name == "comment-does-not-count" else "more than 32"
        for argv in (["config", "check", str(p)], ["simulate", "--cluster", str(p)]):
            cases.append(Case(f"toml-{name}-{argv[0]}", argv, True, needle))
    paths = [("paths.store", 'store = "/proc/self/mem"'), ("paths.journal", 'journal = "/dev/sda"'),
             ("paths.records", 'records = "/boot/grub/grub.cfg"'), ("paths.allowed_roots.0", 'allowed_roots = ["/"]'),
             ("paths.state_dir", 'state_dir = "/sys/kernel"'), ("paths.engine_db", 'engine_db = "/home/x/e.sqlite"'),
             ("paths.allowed_roots", 'allowed_roots = "/srv"'), ("paths.state_dir", 'state_dir = "/root/../etc/hops"')]
    for i, (key, line) in enumerate(paths):
        p = tmp / f"paths{i}.toml"
        p.write_text(f"[paths]\n{line}\n")
        cases.append(Case(f"paths-{i}-{key}", ["config", "check", str(p)], True, key))
    return cases


def _row(i: int, gpus: int, user: str = "u", nodes: str = "g1", **over: object) -> dict[str, object]:
    r: dict[str, object] = {"job_id": i, "name": f"j{i}", "user": user, "partition": "gpu", "state": {"current": "COMPLETED"},
                            "time": {"submission": T0 + 10 * i, "start": T0 + 10 * i, "end": T0 + 10 * i + 60},
                            "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": gpus}]}, "nodes": nodes}
    r.update(over)
    return r


def _export(rows: list[object]) -> str:
    return json.dumps({"meta": {"plugin": {"type": "openapi/dbv0.0.38"}}, "jobs": rows})


def _whatif(tmp: Path) -> list[Case]:
    fast = ["--round-seconds", "30", "--refresh-seconds", "5", "--policies", "slurm-backfill"]
    exports = {
        "names": (_export([_row(1, 2, user="\x1b]0;pwned\x07"), _row(2, 1, user="r\u202etl", name="\x9b31m"),
                           _row(3, 1, user="del\x7f", name="a\u2028b")]), None, "", True),
        "huge-and-good": (_export([_row(1, 1025), _row(2, 2), _row(3, 65, nodes="g2")]), None, "outside 0..1024", True),
        "all-too-big": (_export([_row(i, 4096, nodes=f"n[{i * 512 + 1}-{i * 512 + 512}]") for i in range(40)]),
                        True, "outside 0..1024", False),
        "digits": (_export([_row(1, 2), _row(2, 2)]).replace(f'"job_id": 2', '"job_id": ' + "7" * 6000), None,
                   "number of 6000 digits", True),
        "hostlist-bomb": (_export([_row(1, 1, nodes="n[1-999999999]"), _row(2, 1), _row(3, 1, nodes="a[1-9]-b[1-999]")]),
                          None, "more than 1024 nodes", True),
        "hostlist-digits": (_export([_row(1, 1, nodes="n[0-999999999999]"), _row(2, 1)]), None, "is not a range", True),
        "bom-parsable2": ("\ufeffJobID|State|Submit|Start|End|AllocTRES|NodeList\n"
                          "1|COMPLETED|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:01:00|gres/gpu=1|g1\n",
                          None, "", True),
        "bom-only": ("\ufeff", True, "the export is empty", False),
    }
    cases = []
    for name, (text, refuse, needle, writes) in exports.items():
        p = tmp / f"{name}.json"
        p.write_text(text, encoding="utf-8")
        out = tmp / f"out-{name}"
        cases.append(Case(f"whatif-{name}", ["whatif", str(p), *fast, "--out", str(out)], refuse, needle,
                          out=out if writes else None))
    big = tmp / "count.toml"
    big.write_text('name = "x"\n[[server_kind]]\nname = "k"\ngpu_type = "v100"\ngpus = 8\ncount = 1000000000\n')
    cases.append(Case("whatif-cluster-count", ["whatif", str(tmp / "names.json"), "--cluster", str(big)], True, "count"))
    deep = tmp / "assume.toml"
    deep.write_text("[defaults]\nmodel = " + "[" * 50 + "]" * 50 + "\n")
    cases.append(Case("whatif-assumptions-deep", ["whatif", str(tmp / "names.json"), "--assumptions", str(deep)], True,
                      "more than 32"))
    return cases


def _database(path: Path, statements: list[str], wal: bool = False) -> None:
    con = sqlite3.connect(path)
    if wal:
        con.execute("PRAGMA journal_mode = WAL")
    for sql in statements:
        con.execute(sql)
    con.commit()
    con.close()


def _read_only(tmp: Path) -> list[Case]:
    cases = []
    dbs = {
        "foreign": (["CREATE TABLE ledger (who TEXT, owes REAL)", "INSERT INTO ledger VALUES ('\x1b[2Jbob', 1)"], False,
                    "not the hops-slurm engine's", "no job_records table"),
        "foreign-wal": (["CREATE TABLE t (x)", "INSERT INTO t VALUES (1)"], True, "not the hops-slurm engine's",
                        "no job_records table"),
        "newer": (["CREATE TABLE jobs (job_id TEXT)", "CREATE TABLE meta (key TEXT, value TEXT)", "PRAGMA user_version = 99",
                   "CREATE TABLE job_records (job_id TEXT, record TEXT)"], False, "schema version 99", ""),
        "odd-columns": (["CREATE TABLE jobs (job_id TEXT, payload BLOB)", "CREATE TABLE meta (key TEXT, value TEXT)"], True,
                        "columns: payload", "no job_records table"),
    }
    for name, (sql, wal, queue_needle, report_needle) in dbs.items():
        state = tmp / f"state-{name}"
        state.mkdir()
        _database(state / "engine.sqlite", sql, wal)
        config = tmp / f"{name}.toml"
        config.write_text(f'[paths]\nstate_dir = "{state}"\n')
        cases.append(Case(f"readonly-queue-{name}", ["queue", "--config", str(config)], True, queue_needle, watch=state))
        cases.append(Case(f"readonly-report-{name}", ["report", "--records", str(state / "engine.sqlite")],
                          bool(report_needle), report_needle, watch=state))
        cases.append(Case(f"readonly-config-{name}", ["config", "check", str(config)], False, watch=state))
    junk = tmp / "state-junk"
    junk.mkdir()
    (junk / "engine.sqlite").write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    config = tmp / "junk.toml"
    config.write_text(f'[paths]\nstate_dir = "{junk}"\n')
    cases.append(Case("readonly-queue-junk", ["queue", "--config", str(config)], True, "engine.sqlite", watch=junk))
    cases.append(Case("readonly-report-junk", ["report", "--records", str(junk / "engine.sqlite")], True, "engine.sqlite",
                      watch=junk))
    return cases


def surfaces(tmp: Path) -> list[Case]:
    """Every case of this module."""
    out: list[Case] = []
    for part in (_toml, _whatif, _read_only):
        d = tmp / part.__name__.strip("_")
        d.mkdir()
        out += part(d)
    return out

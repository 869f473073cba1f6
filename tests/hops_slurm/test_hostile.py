"""Hostile input through the public CLI: scripts, comments, job names, configs, records files, options,
and the surfaces added since (issue 24, :mod:`hostile_surfaces`): deep TOML, path keys, what-if exports,
read-only commands on foreign databases.

Every case runs ``hops-slurm`` in-process (:func:`hops_slurm.cli.main`) and must end in a clean exit
status with, when refused, one error line naming the problem; no exception may escape (that would be a
traceback), nothing printed may carry a raw control character, and no case may be silently accepted
where it is malformed. A read-only command's case names a folder it must leave byte for byte as it was
(0 writes); a case that writes files names the folder whose text files must hold no raw control
character. The counts (cases, refused, accepted, tracebacks, writes, raw files) are printed with ``-s``.
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hooks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from hook_corpus import corpus  # noqa: E402
from hostile_surfaces import Case, files_of, raw_text_files, surfaces  # noqa: E402

from hops_slurm.cli import main  # noqa: E402
from hops_slurm.directives import parse_script  # noqa: E402
from hops_slurm.errors import DirectiveError  # noqa: E402

_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]")


def _scripts(tmp: Path) -> list[Case]:
    cases = []
    rejected = []
    for script, _ in corpus(777, 2000):
        try:
            parse_script(script)
        except DirectiveError as exc:
            rejected.append((script, exc.key))
    for i, (script, key) in enumerate(rejected[:90]):
        p = tmp / f"s{i}.sh"
        p.write_bytes(script)
        cases.append(Case(f"script-{i}", ["directives", "check", str(p)], True, f"#HOPS {key}:"))
    (tmp / "dir.sh").mkdir()
    os.mkfifo(tmp / "fifo.sh")
    (tmp / "empty.sh").write_bytes(b"")
    (tmp / "latin1.sh").write_bytes(b"#!/bin/bash\n#HOPS gpus=1 samples=1M batch-size=8 model=caf\xe9\n")
    (tmp / "nul.sh").write_bytes(b"#HOPS gpus=1\x00 samples=1M batch-size=8 model=m\n")
    (tmp / "esc name\x1b[31m.sh").write_bytes(b"#HOPS gpus=0 samples=1M batch-size=8 model=m\n")
    cases += [
        Case("script-dir", ["directives", "check", str(tmp / "dir.sh")], True, "not a regular file"),
        Case("script-fifo", ["directives", "check", str(tmp / "fifo.sh")], True, "not a regular file"),
        Case("script-missing", ["directives", "check", str(tmp / "nope.sh")], True, "No such file"),
        Case("script-devzero", ["directives", "check", "/dev/zero"], True, "not a regular file"),
        Case("script-latin1", ["directives", "check", str(tmp / "latin1.sh")], True, "0xE9 is not allowed"),
        Case("script-nul", ["directives", "check", str(tmp / "nul.sh")], True, "0x00 is not allowed"),
        Case("script-escname", ["directives", "check", str(tmp / "esc name\x1b[31m.sh")], True, "\\x1b[31m"),
        Case("script-empty", ["directives", "check", str(tmp / "empty.sh")], False),
    ]
    return cases


COMMENTS = ["hops:", "hops: gpus=1", "hops:gpus=1\nsamples=1M batch-size=8 model=m", "hops:gpus=1\rsamples=1M",
            "hops:gpus=1\x1b[2J samples=1M batch-size=8 model=m", "hops:" + "gpus=1 " * 300, "  hops:\tgpus=x",
            "hops:gpus=1 samples=1M batch-size=8 model=m\u202e", "hops:gpus=1 samples=1M batch-size=8 model=café",
            "hops:gpus=1 samples=1M batch-size=8 model=m lr=0.1e-99@1", "hops:gpus=1 samples=inf batch-size=8 model=m",
            "hops:gpus=1 samples=nan batch-size=8 model=m", "hops:gpus=1 samples=1e15 batch-size=8 model=m",
            "hops:gpus=1 samples=1M batch-size=8 model=os.:system", "hops:gpus=1,1 samples=1M batch-size=8 model=m",
            "hops:gpus=1 samples=1M batch-size=8 model=m lr=1@1 lr=2@1", "hops:gpus=1 samples=1M batch-size=8 model=$(id)",
            "hops:gpus=1 samples=1M batch-size=8 model=m params=99999999999999", "hops:=", "hops:==",
            "hops:gpus=1 samples=1M batch-size=8 model=m lr=1001@1", "hops:gpus=1 samples=1M batch-size=8 model=m lr-scale=sqrt",
            "hops:gpus=2-1 samples=1M batch-size=8 model=m", "hops:gpus=1-16 levels=9 samples=1M batch-size=8 model=m",
            "hops:gpus=1 epochs=100000 dataset-size=100G batch-size=8 model=m", "hops:gpus=1\x00 samples=1M",
            "hops:gpus=1\u00a0samples=1M batch-size=8 model=m", "hops:gpus=1\u2028samples=1M batch-size=8 model=m",
            "hops:gpus=1\x85samples=1M batch-size=8 model=m", "hops:gpus=1\x0bsamples=1M batch-size=8 model=m"]


def _comments(tmp: Path) -> list[Case]:
    plain = tmp / "plain.sh"
    plain.write_bytes(b"#!/bin/bash\nhostname\n")
    return [Case(f"comment-{i}", ["directives", "check", str(plain), "--comment", c], True, "#HOPS ")
            for i, c in enumerate(COMMENTS)]


NAMES = ["a\nb", "\x1b[31mred", "x\r\ny", "\u202eevil", "tab\there", "bell\x07", "nul\x00", "del\x7f", "c1\x9b",
         "line\u2028sep", "|pipe|", "a" * 5000, "ünïcødé", "'quote\"", "$(id)", "%s%n", "{0}", "\\x1b", "\ud800"]


def _job_names(tmp: Path) -> list[Case]:
    cases = []
    for i, name in enumerate(NAMES):
        rec = {"kind": "job", "job_id": f"{i}", "name": name, "user": name, "account": name, "partition": "hops",
               "submit": 100.0, "start": 110.0, "end": 200.0, "state": "COMPLETED", "requirements": [1]}
        p = tmp / f"names{i}.jsonl"
        p.write_text(json.dumps(rec) + "\n", encoding="utf-8", errors="surrogatepass")
        for fmt in (["-o", "JobID,JobName%30,User"], ["-P", "-o", "JobID,JobName,User,Account"]):
            cases.append(Case(f"name-{i}-{fmt[0]}", ["report", "--records", str(p), "--clock", "sim", *fmt], False))
    return cases


def _configs(tmp: Path) -> list[Case]:
    ww = tmp / "worldwritable"
    ww.mkdir()
    ww.chmod(0o777)
    bad: list[tuple[str, str]] = [
        ("scheduler.round_length", "[scheduler]\nround_length = inf\n"),
        ("scheduler.round_length", "[scheduler]\nround_length = nan\n"),
        ("scheduler.round_length", "[scheduler]\nround_length = -inf\n"),
        ("scheduler.round_length", "[scheduler]\nround_length = 1e308\n"),
        ("scheduler.round_length", "[scheduler]\nround_length = 0\n"),
        ("scheduler.round_length", "[scheduler]\nround_length = \"360\"\n"),
        ("scheduler.round_length", "[scheduler]\nround_length = true\n"),
        ("scheduler.round_length", "[scheduler]\nround_length = [1]\n"),
        ("scheduler.queue_refresh", "[scheduler]\nqueue_refresh = 0\n"),
        ("scheduler.queue_refresh", "[scheduler]\nqueue_refresh = \"30\"\n"),
        ("planner.lambda", "[planner]\nlambda = 1e300\n"),
        ("planner.lambda", "[planner]\nlambda = -1\n"),
        ("planner.lambda", "[planner]\nlambda = nan\n"),
        ("planner.sigma", "[planner]\nsigma = 0\n"),
        ("planner.sigma", "[planner]\nsigma = inf\n"),
        ("planner.priority", "[planner]\npriority = \"random\"\n"),
        ("planner.priority", "[planner]\npriority = 1\n"),
        ("scheduler.restart_cost", "[scheduler]\nrestart_cost = 45\n"),
        ("scheduler.max_levels", "[scheduler]\nmax_levels = 8\n"),
        ("planner.gap", "[planner]\ngap = 1\n"),
        ("planner.gap", "[planner]\ngap = nan\n"),
        ("planner.gap", "[planner]\ngap = \"0.01\"\n"),
        ("planner.time_limit", "[planner]\ntime_limit = 0\n"),
        ("planner.time_limit", "[planner]\ntime_limit = 1e20\n"),
        ("planner.solver", "[planner]\nsolver = \"gurobi\"\n"),
        ("planner.node_limit", "[planner]\nnode_limit = 0\n"),
        ("planner.window", "[planner]\nwindow = \"none\"\n"),
        ("solver.mip_gap", "[solver]\nmip_gap = 0.01\n"),
        ("slurm.partition", "[slurm]\npartition = \"\"\n"),
        ("slurm.partition", "[slurm]\npartition = \"hops gpu\"\n"),
        ("slurm.partition", "[slurm]\npartition = \"hops\\nx\"\n"),
        ("slurm.partition", "[slurm]\npartition = \"a;rm -rf /\"\n"),
        ("slurm.partition", "[slurm]\npartition = 5\n"),
        ("slurm.profiler_partition", "[slurm]\nprofiler_partition = \"" + "p" * 100 + "\"\n"),
        ("slurm.backend", "[slurm]\nbackend = \"cli\"\n"),
        ("slurm.reservation_prefix", "[slurm]\nreservation_prefix = \"hops_\"\n"),
        ("paths.state_dir", "[paths]\nstate_dir = \"relative/dir\"\n"),
        ("paths.state_dir", "[paths]\nstate_dir = \"\"\n"),
        ("paths.state_dir", "[paths]\nstate_dir = \"   \"\n"),
        ("paths.state_dir", "[paths]\nstate_dir = 1\n"),
        ("paths.state_dir", f"[paths]\nstate_dir = \"{ww}\"\n"),
        ("paths.store", "[paths]\nstore = \"\"\n"),
        ("paths.store", "[paths]\nstore = \"../../etc/passwd\"\n"),
        ("paths.journal", "[paths]\njournal = 3\n"),
        ("paths.records", "[paths]\nrecords = \"a/../../b\"\n"),
        ("engine.env_dir", "[engine]\nenv_dir = \"\"\n"),
        ("engine.env_dir", f"[engine]\nenv_dir = \"{ww}\"\n"),
        ("engine.probe_dir", f"[engine]\nprobe_dir = \"{ww}\"\n"),
        ("engine.probe_dir", "[engine]\nprobe_dir = \"..\"\n"),
        ("engine.probe_python", "[engine]\nprobe_python = \"python3\"\n"),
        ("engine.probe_python", "[engine]\nprobe_python = 3\n"),
        ("engine.probe_device", "[engine]\nprobe_device = \"tpu\"\n"),
        ("engine.probe_device", "[engine]\nprobe_device = \"cuda;id\"\n"),
        ("engine.probe_size", "[engine]\nprobe_size = \"huge\"\n"),
        ("engine.probe_iterations", "[engine]\nprobe_iterations = 0\n"),
        ("engine.probe_iterations", "[engine]\nprobe_iterations = 1.5\n"),
        ("engine.probe_iterations", "[engine]\nprobe_iterations = \"15\"\n"),
        ("engine.probe_iterations", "[engine]\nprobe_iterations = 100000\n"),
        ("engine.probe_time_limit", "[engine]\nprobe_time_limit = inf\n"),
        ("engine.probe_time_limit", "[engine]\nprobe_time_limit = 0\n"),
        ("engine.probe_retries", "[engine]\nprobe_retries = -1\n"),
        ("engine.probe_retries", "[engine]\nprobe_retries = true\n"),
        ("engine.monitor_interval", "[engine]\nmonitor_interval = 0\n"),
        ("engine.monitor_interval", "[engine]\nmonitor_interval = 1e9\n"),
        ("engine.settle_timeout", "[engine]\nsettle_timeout = nan\n"),
        ("engine.default_b_link", "[engine]\ndefault_b_link = 0\n"),
        ("engine.default_b_link", "[engine]\ndefault_b_link = inf\n"),
        ("engine.default_b_net", "[engine]\ndefault_b_net = 1e300\n"),
        ("engine.default_b_net", "[engine]\ndefault_b_net = -1\n"),
        ("engine.colour", "[engine]\ncolour = 1\n"),
        ("nosuchsection", "[nosuchsection]\nx = 1\n"),
        ("scheduler", "scheduler = 5\n"),
        ("not valid TOML", "[scheduler\n"),
        ("not valid TOML", "round_length = \n"),
        ("not valid TOML", "\x00\x01\x02"),
        ("not valid TOML", "[a]\n" * 3),
        ("queue_refresh", "[scheduler]\nround_length = 10\nqueue_refresh = 20\n"),
        ("planner.time_limit", "[scheduler]\nround_length = 10\nqueue_refresh = 5\n[planner]\ntime_limit = 20\n"),
        ("profiler_partition", "[slurm]\npartition = \"x\"\nprofiler_partition = \"x\"\n"),
    ]
    cases = []
    for i, (key, text) in enumerate(bad):
        p = tmp / f"c{i}.toml"
        p.write_text(text)
        cases.append(Case(f"config-{i}-{key}", ["config", "check", str(p)], True, key))
    (tmp / "bin.toml").write_bytes(b"\xff\xfe[scheduler]\n")
    (tmp / "cdir.toml").mkdir()
    cases += [Case("config-binary", ["config", "check", str(tmp / "bin.toml")], True, "not UTF-8"),
              Case("config-dir", ["config", "check", str(tmp / "cdir.toml")], True, "cdir.toml"),
              Case("config-missing", ["config", "check", str(tmp / "none.toml")], True, "no such file"),
              Case("config-fifo-free", ["config", "check", "/dev/null"], False)]
    return cases


def _records(tmp: Path) -> list[Case]:
    good = {"kind": "job", "job_id": "1", "submit": 1.0, "state": "COMPLETED", "start": 2.0, "end": 3.0}
    lines = [
        '{"kind": "job", "job_id": "1", "submit": NaN}', '{"kind": "job", "job_id": "1", "submit": Infinity}',
        '{"kind": "job", "job_id": "1", "submit": -Infinity}', '{"kind": "job", "job_id": "1", "submit": 1e400}',
        '{"kind": "job", "job_id": "1", "submit": "x"}', '{"kind": "job", "job_id": 1, "submit": 1}',
        '{"kind": "job"}', '{"kind": "alien", "x": 1}', '[1, 2]', '"string"', 'null', '{', '{"a": }',
        '[' * 100000 + ']' * 100000, '{"kind": "job", "job_id": "1", "submit": 1, "placements": [{"start": NaN, "config": {}}]}',
        '{"kind": "job", "job_id": "1", "submit": 1, "requirements": "abc"}',
        '{"kind": "round", "time": NaN}', '{"kind": "round", "time": 1, "total_gpus": 1.5}',
        '{"kind": "job", "job_id": "1", "submit": 1, "extra_key": 1}', '\ud800',
    ]
    cases = []
    for i, line in enumerate(lines):
        p = tmp / f"r{i}.jsonl"
        p.write_text(line + "\n", encoding="utf-8", errors="surrogatepass")
        cases.append(Case(f"records-jsonl-{i}", ["report", "--records", str(p)], True, str(p)))
    db = tmp / "good.sqlite"
    from hops_slurm.records import JobRecord
    from hops_slurm.report.source import write_sqlite

    write_sqlite(db, [JobRecord.model_validate({k: v for k, v in good.items() if k != "kind"})])
    data = db.read_bytes()
    rng = random.Random(5)
    for i, cut in enumerate([16, 100, 512, 1024, 2048, len(data) // 2, len(data) - 100]):
        p = tmp / f"trunc{i}.sqlite"
        p.write_bytes(data[:cut])
        # SQLite may still read a file missing only its tail: refused or read, never a traceback
        cases.append(Case(f"records-truncated-{cut}", ["report", "--records", str(p)], None, str(p)))  # type: ignore[arg-type]
    for i in range(8):
        p = tmp / f"flip{i}.sqlite"
        b = bytearray(data)
        for _ in range(50):
            b[rng.randrange(100, len(b))] = rng.randrange(256)
        p.write_bytes(bytes(b))
        cases.append(Case(f"records-corrupt-{i}", ["report", "--records", str(p)], None, str(p)))  # type: ignore[arg-type]
    nan_db = tmp / "nan.sqlite"
    con = sqlite3.connect(nan_db)
    con.execute("CREATE TABLE job_records (job_id TEXT, record TEXT)")
    con.execute("INSERT INTO job_records VALUES ('1', '{\"job_id\": \"1\", \"submit\": NaN}')")
    con.execute("INSERT INTO job_records VALUES ('2', 'not json')")
    con.commit()
    con.close()
    other = tmp / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    (tmp / "emptydir").mkdir()
    os.mkfifo(tmp / "r.fifo")
    (tmp / "rand.bin").write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    cases += [
        Case("records-sqlite-nan", ["report", "--records", str(nan_db)], True, str(nan_db)),
        Case("records-sqlite-other", ["report", "--records", str(other)], True, "no job_records table"),
        Case("records-emptydir", ["report", "--records", str(tmp / "emptydir")], True, "no *.jsonl"),
        Case("records-fifo", ["report", "--records", str(tmp / "r.fifo")], True, "not a regular file"),
        Case("records-random", ["report", "--records", str(tmp / "rand.bin")], True, "rand.bin"),
        Case("records-missing", ["report", "--records", str(tmp / "nope")], True, "no such"),
        Case("records-devnull", ["report", "--records", "/dev/null"], True, "not a regular file"),
    ]
    return cases


def _options(tmp: Path) -> list[Case]:
    rec = tmp / "ok.jsonl"
    rec.write_text(json.dumps({"kind": "job", "job_id": "1", "submit": 1.0, "start": 2.0, "end": 30.0,
                               "state": "COMPLETED", "name": "n"}) + "\n")
    (tmp / "bin.toml").write_bytes(b"\xff\xfe[x]\n")
    base = ["report", "--records", str(rec), "--clock", "sim"]
    bad = [
        (["-o", "JobName%99999999999"], "outside 1..1000"), (["-o", "JobName%-9999999999999999999999"], "outside 1..1000"),
        (["-o", "JobName%0"], "outside"), (["-o", "JobName%x"], "bad width"), (["-o", "JobName%1e3"], "bad width"),
        (["-o", "Nope"], "unknown field"), (["-o", ","], "names no fields"), (["-o", "Job\x1bName"], "\\x1b"),
        (["-o", "JobName%" + "9" * 5000], "bad width"), (["-S", "garbage"], "cannot parse time"),
        (["-S", "9999-99-99"], "9999-99-99"), (["-E", "\x00"], "\\x00"), (["--now", "now+1e400"], "now+1e400"),
        (["--summary", "--window", "1e400h"], "1e400h"), (["--window", "-5h"], "--window"),
        (["--summary", "--window", ""], "duration"), (["--summary", "--window", "99999999999999999999d"], "9999"),
        (["--summary", "--window", "0s"], "0s"), (["--now", "@nan"], "@nan"), (["--now", "@inf"], "@inf"),
        (["-S", "now-99999999999999weeks"], "now-"), (["--total-gpus", "-5", "--summary"], "total-gpus"),
        (["--total-gpus", "0", "--summary"], "total-gpus"), (["--total-gpus", "x"], "total-gpus"),
        (["--sacct", "xml"], "sacct"), (["--clock", "moon"], "clock"),
    ]
    cases = [Case(f"option-report-{i}", base + argv, True, names) for i, (argv, names) in enumerate(bad)]
    cases += [Case("option-nocommand", [], True, "required"), Case("option-unknown", ["frobnicate"], True, "invalid choice"),
              Case("option-bench", ["bench", "nope\x1b"], True, "unknown benchmark"),
              Case("option-config-action", ["config", "destroy"], True, "invalid choice"),
              Case("option-directives-none", ["directives", "check"], True, "required"),
              Case("option-report-none", ["report"], True, "no records"),
              Case("option-sim-nan", ["simulate", "--round-seconds", "nan"], True, "--round-seconds"),
              Case("option-sim-inf", ["simulate", "--refresh-seconds", "inf"], True, "--refresh-seconds"),
              Case("option-sim-neg", ["simulate", "--grace-seconds", "-1"], True, "--grace-seconds"),
              Case("option-sim-ckpt", ["simulate", "--checkpoint-seconds", "Bogus=1"], True, "--checkpoint-seconds"),
              Case("option-sim-seeds", ["simulate", "--seeds", "x"], True, "--seeds"),
              Case("option-sim-cluster-bin", ["simulate", "--cluster", str(tmp / "bin.toml")], True, "bin.toml"),
              Case("option-sim-cluster-dir", ["simulate", "--cluster", str(tmp)], True, str(tmp)),
              Case("option-sim-workload", ["simulate", "--workload", str(tmp / "bin.toml")], True, "bin.toml"),
              Case("option-sim-policy", ["simulate", "--policies", "hops:restart_penalty=nan"], True, "restart_penalty"),
              Case("option-cal-procs", ["calibrate", "--procs", "0"], True, "--procs"),
              Case("option-cal-reps", ["calibrate", "--reps", "0"], True, "--reps"),
              Case("option-cal-max", ["calibrate", "--max-params", "99999999999999"], True, "--max-params"),
              Case("option-cal-min", ["calibrate", "--min-params", "-1"], True, "--min-params"),
              Case("option-cal-steps", ["calibrate", "--steps", "1"], True, "--steps"),
              Case("option-cal-backend", ["calibrate", "--backend", "nope"], True, "nope"),
              Case("option-spec-bin", ["minicluster", "status", "--spec", str(tmp / "bin.toml")], True, "bin.toml"),
              Case("option-spec-dir", ["minicluster", "status", "--spec", str(tmp)], True, "not a regular file"),
              Case("option-demo-timeout", ["demo", "--timeout", "nan"], True, "--timeout"),
              Case("option-queue-format", ["queue", "--config", str(tmp / "none.toml"), "--format", "x"], True, "none.toml")]
    return cases


def _all_cases(tmp: Path) -> list[Case]:
    out: list[Case] = []
    for part in (_scripts, _comments, _job_names, _configs, _records, _options, surfaces):
        d = tmp / part.__name__
        d.mkdir()
        out += part(d)
    return out


def _run(case: Case, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str, BaseException | None]:
    try:
        code = main(case.argv)
    except SystemExit as exc:  # argparse: usage and one error line, status 2
        code = int(exc.code or 0)
    except BaseException as exc:  # noqa: BLE001 - anything else would be a traceback for the user
        out, err = capsys.readouterr()
        return -1, out, err, exc
    out, err = capsys.readouterr()
    return code, out, err, None


def test_hostile_inputs_give_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOPS_SLURM_RECORDS", raising=False)
    monkeypatch.delenv("HOPS_CONFIG", raising=False)
    cases = _all_cases(tmp_path)
    assert len(cases) >= 300
    tracebacks, silent, unclear, unprintable, writes, raw_files = [], [], [], [], [], []
    refused = accepted = 0
    for case in cases:
        before = files_of(case.watch) if case.watch is not None else None
        code, out, err, exc = _run(case, capsys)
        if before is not None and files_of(case.watch) != before:  # type: ignore[arg-type]
            writes.append(case.name)
        if case.out is not None:
            raw_files += [f"{case.name}: {name}" for name in raw_text_files(case.out)]
        if exc is not None:
            tracebacks.append((case.name, repr(exc)[:200]))
            continue
        if _RAW_CONTROL.search(out + err):
            unprintable.append((case.name, (out + err)[:200]))
        error_lines = [ln for ln in err.splitlines() if "error:" in ln]
        if code == 0:
            accepted += 1
            if case.refuse:
                silent.append(case.name)
            continue
        refused += 1
        if case.refuse is False:
            silent.append(f"{case.name} (refused a valid input: {err.strip()[:200]})")
        # one error line, naming the problem (a config may add one line per bad key below it)
        first = error_lines[0] if error_lines else ""
        if not first or "Traceback" in err or (case.names and case.names not in err):
            unclear.append((case.name, err.strip()[:300]))
    print(f"\nhostile CLI suite: {len(cases)} cases, {refused} refused with an error line, {accepted} accepted, "
          f"{len(tracebacks)} tracebacks, {len(silent)} wrongly accepted/refused, {len(unclear)} unclear, "
          f"{len(unprintable)} with raw control characters, {len(writes)} writes by read-only commands "
          f"({sum(c.watch is not None for c in cases)} watched), {len(raw_files)} output files with a raw escape "
          f"({sum(c.out is not None for c in cases)} cases writing files)")
    assert (tracebacks, silent, unclear, unprintable, writes, raw_files) == ([], [], [], [], [], [])

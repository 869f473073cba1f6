"""The results documents say when they were true, and nobody's machine is in them (issue 36, item 5).

Every ``docs/results/*.md`` starts with the header of :mod:`hops_slurm.tools.results_header`. A generated
document names its generator (``module:function``) and the command that made it; this test imports the
generator (nothing runs) and asks its module for the command it writes today for the same environment
(``command(env)``). A renamed benchmark, a dropped ``HOPS_BENCH_*`` variable or a moved generator fails
here instead of leaving a document that no command reproduces; regenerate it, or mark it ``historical``
(hand-written about a past measurement, with the command and commit it was measured at).

The committed outputs under docs/results/ and docs/demo/ carry no machine's paths (a checkout under
/work/, a home directory, /root/, /tmp/): a reader's machine has none of them.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import replace
from pathlib import Path

import pytest

from hops_slurm.tools import results_header
from hops_slurm.tools.bench import discover
from hops_slurm.tools.results_header import Header, bench_command, command_env, parse

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
DOCUMENTS = sorted(RESULTS.glob("*.md"))
#: committed outputs a generator or a person wrote: text files under these folders
OUTPUTS = (ROOT / "docs" / "results", ROOT / "docs" / "demo")
TEXT = {".md", ".txt", ".json", ".jsonl", ".csv"}
#: a machine's own paths: a checkout or scratch folder, a home directory, root's home (not /var/tmp/...)
MACHINE_PATH = re.compile(r"(?<![\w.~$/-])/(?:work|home|root|tmp)/[\w.~+/-]*")
#: paths every machine that runs this project's instructions has (the live tests' lock), and a placeholder
EXAMPLES = {"/tmp/hops-live.lock", "/tmp/..."}


def _doc_id(path: Path) -> str:
    return path.name


def test_the_documents_are_there() -> None:
    assert len(DOCUMENTS) >= 20, f"docs/results/*.md: found only {len(DOCUMENTS)}"


def _mismatch(head: Header) -> str | None:
    """Why a generated header is not what its generator writes today (None: it is, or it is historical)."""
    if head.historical:
        return None
    if "+dirty" in head.commit:
        return f"generated on a tree with uncommitted changes ({head.commit}): regenerate it on a commit"
    module_name, _, function = (head.generator or "").partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        return f"its generator's module {module_name} is gone ({e})"
    if not callable(getattr(module, function, None)):
        return f"{module_name} has no function {function} any more"
    command_of = getattr(module, "command", None)
    if not callable(command_of):
        return f"{module_name} writes results but exposes no command(env)"
    today = command_of(command_env(head.command))
    if today != head.command:
        return f"it says it was made by `{head.command}`, but {module_name} writes `{today}` for it today"
    return None


@pytest.mark.parametrize("doc", DOCUMENTS, ids=_doc_id)
def test_each_results_document_starts_with_its_header(doc: Path) -> None:
    first = doc.read_text().split("\n", 1)[0]
    head = parse(first)
    assert head is not None, (
        f"{doc.relative_to(ROOT)}: the first line is not a results header (hops_slurm/tools/results_header.py): "
        f"{first[:120]!r}; regenerate the document or mark it historical")
    why = _mismatch(head)
    assert why is None, f"{doc.relative_to(ROOT)}: {why}: regenerate it, or mark it historical"


def test_every_benchmark_exposes_the_command_it_writes() -> None:
    """Each benchmark's ``command`` names it and every ``HOPS_BENCH_*`` variable its own source reads, so a
    variable added to a benchmark lands in the header of the documents it writes."""
    for name, module in discover().items():
        assert module.command({}).endswith(f"hops-slurm bench {name}"), name
        read = set(re.findall(r"HOPS_BENCH_[A-Z_]+", inspect.getsource(module)))
        assert read <= set(module.ENV), f"{module.__name__} reads {sorted(read - set(module.ENV))} but ENV omits them"
        env = {var: "1,2" for var in module.ENV}
        assert command_env(module.command(env)) == env, name


def test_every_writer_of_a_results_document_exposes_its_command() -> None:
    """Any module of hops_slurm/ that writes through the header (a benchmark, the Slurm latency measurement,
    the profiler's GPU check) has ``command(env)``, so a document it wrote can be checked here."""
    writers = sorted(p for p in (ROOT / "hops_slurm").rglob("*.py") if "results_header.write(" in p.read_text())
    assert len(writers) >= 20
    for path in writers:
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        command_of = getattr(importlib.import_module(name), "command", None)
        assert callable(command_of) and isinstance(command_of({}), str) and command_of({}), name


def test_a_changed_command_or_generator_fails_the_check() -> None:
    """The check above can fail: a header naming a variable the benchmark does not read, another benchmark's
    name, a generator that is gone or a dirty tree is not what the generator writes today; historical passes."""
    good = Header("hops_slurm.tools.bench.entities:run", "HOPS_BENCH_SEEDS=0 hops-slurm bench entities", "2b5165a",
                  "2026-11-28")
    assert _mismatch(good) is None
    for bad in (replace(good, command="HOPS_BENCH_GONE=0 hops-slurm bench entities"),
                replace(good, command="hops-slurm bench entity"),
                replace(good, generator="hops_slurm.tools.bench.entities:gone"),
                replace(good, generator="hops_slurm.tools.bench.gone:run"),
                replace(good, commit="2b5165a+dirty")):
        assert _mismatch(bad) is not None, bad
    assert _mismatch(replace(good, generator=None, command="anything at all")) is None


def test_the_header_reads_back_what_was_written() -> None:
    h = Header("hops_slurm.tools.bench.store_flood:run", 'HOPS_BENCH_SEEDS=0 hops-slurm x --w "a b\\c"', "2b5165a", "2026-11-28")
    assert parse(h.line()) == h and not h.historical
    old = Header(None, "hops-slurm bench load", "8a4d4a6+dirty", "2026-11-20")
    assert parse(old.line()) == old and old.historical
    assert old.line() == '<!-- results: historical command="hops-slurm bench load" commit=8a4d4a6+dirty date=2026-11-20 -->'
    for bad in ("# Title", "<!-- results: generator=x command=\"c\" commit=2b5165a date=2026-11-28 -->",
                "<!-- results: historical command=\"\" commit=2b5165a date=2026-11-28 -->",
                "<!-- results: historical command=\"c\" commit=HEAD date=2026-11-28 -->"):
        assert parse(bad) is None, bad
    with pytest.raises(ValueError):
        Header(None, "two\nlines", "2b5165a", "2026-11-28").line()


def test_write_puts_the_header_first(tmp_path: Path) -> None:
    path = results_header.write(tmp_path / "x.md", "# Title\n\nbody\n", generator="m.n:run", command="hops-slurm bench x")
    text = path.read_text()
    head = results_header.read(path)
    assert head is not None and head.generator == "m.n:run" and head.command == "hops-slurm bench x"
    assert re.fullmatch(r"[0-9a-f]{7,40}(\+dirty)?|unknown", head.commit)
    assert results_header.body(text) == "# Title\n\nbody\n"
    assert bench_command("x", ("A", "B"), {"B": "1 2", "C": "3"}) == "B='1 2' hops-slurm bench x"
    assert command_env("B='1 2' A=3 hops-slurm bench x --out D=4") == {"B": "1 2", "A": "3"}


def test_where_a_run_happened_is_written_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The optional ``ran_on``: outside Slurm ``local``, inside a job array's task the job, task and cluster
    (from the task's own environment); read back by ``parse``; a header without it (older documents) stays
    valid, and anything else in its place (a path, free text) is not a header."""
    assert re.fullmatch(r"local, [1-9]\d* CPUs?", results_header.ran_on({}))
    task = {"SLURM_ARRAY_JOB_ID": "4711", "SLURM_ARRAY_TASK_ID": "3", "SLURM_JOB_ID": "4714",
            "SLURM_CLUSTER_NAME": "hops", "SLURM_CPUS_ON_NODE": "1"}
    assert results_header.ran_on(task) == "slurm job array 4711 task 3 on cluster hops, 1 CPU"
    job = {"SLURM_JOB_ID": "12", "SLURM_CLUSTER_NAME": 'a b/"c', "SLURM_CPUS_ON_NODE": "1"}
    assert results_header.ran_on(job) == "slurm job 12 on cluster a_b__c, 1 CPU"
    h = Header("m.n:run", "hops-slurm bench x", "2b5165a", "2026-11-28", "slurm job array 4711 task 3 on cluster hops, 4 CPUs")
    assert h.line().endswith(' date=2026-11-28 ran_on="slurm job array 4711 task 3 on cluster hops, 4 CPUs" -->')
    assert parse(h.line()) == h
    assert parse(replace(h, ran_on=None).line()).ran_on is None
    for bad in ("on /work/x", "local", "local, 0 CPUs", "", "slurm job array 1 task 2 on cluster, 1 CPU"):
        assert parse(replace(h, ran_on=None).line().replace(" -->", f' ran_on="{bad}" -->')) is None, bad
        with pytest.raises(ValueError):
            replace(h, ran_on=bad).line()
    for key, value in task.items():
        monkeypatch.setenv(key, value)
    head = results_header.read(results_header.write(tmp_path / "x.md", "# T\n", generator="m.n:run", command="hops-slurm bench x"))
    assert head is not None and head.ran_on == "slurm job array 4711 task 3 on cluster hops, 1 CPU"


def _outputs() -> list[Path]:
    return sorted(p for folder in OUTPUTS for p in folder.rglob("*") if p.is_file() and p.suffix in TEXT)


def test_no_machine_path_in_committed_outputs() -> None:
    found = []
    for path in _outputs():
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{n}: {m.group(0)}" for m in MACHINE_PATH.finditer(line)
                      if m.group(0) not in EXAMPLES]
    assert not found, "machine-specific paths in committed outputs:\n" + "\n".join(found[:40])


def test_the_machine_path_check_can_fail() -> None:
    hits = [m.group(0) for m in MACHINE_PATH.finditer(
        "ran in /work/main/docs; /home/ana/x and /root/.cache, out /tmp/d12; state /var/tmp/hops-mc and $TMPDIR/x")]
    assert hits == ["/work/main/docs", "/home/ana/x", "/root/.cache", "/tmp/d12"]

"""The same bytes through the submit hook (lua5.1) and the Python parser: identical results.

A seeded corpus (tests/hooks/hook_corpus.py) and hypothesis-built inputs, each run in one lua5.1 process
per batch: accept/reject, key, message and canonical form must be equal; no input may hit an internal
error on either side; every message is one line of printable ASCII; every canonical form either side
writes parses back to itself on both sides.
"""

from __future__ import annotations

import collections
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hops_slurm.directives import HopsDirectives, parse_script
from hops_slurm.hooklua import Outcome, run_batch, run_python

from hook_corpus import corpus

SEED = 20261123
N_CASES = 5000


def _compare(cases: list[tuple[bytes, bytes | None]]) -> tuple[list[Outcome], list[tuple[object, Outcome, Outcome]]]:
    lua = run_batch(cases)
    py = [run_python(s, c) for s, c in cases]
    return py, [(case, a, b) for case, a, b in zip(cases, lua, py) if a != b]


def _one_printable_line(text: str) -> bool:
    return all(ch in string.printable and ch not in "\r\n\x0b\x0c" for ch in text) and len(text) <= 400


def test_generated_corpus_agrees() -> None:
    cases = corpus(SEED, N_CASES)
    py, disagreements = _compare(cases)
    counts = collections.Counter(o.kind for o in py)
    print(f"\ndifferential corpus: {len(cases)} cases, {counts['OK']} accepted, {counts['ERR']} rejected, "
          f"{counts['NONE']} not Hops jobs, {counts['INTERNAL']} internal errors, {len(disagreements)} disagreements")
    assert disagreements == []
    assert counts["INTERNAL"] == 0
    # the corpus is not degenerate: every outcome and many different keys occur
    assert counts["OK"] > 200 and counts["ERR"] > 2000 and counts["NONE"] > 200
    assert len({o.key for o in py if o.kind == "ERR"}) >= 12
    assert all(_one_printable_line(o.text) for o in py if o.kind == "ERR")


def test_every_canonical_form_parses_back_on_both_sides() -> None:
    accepted = [o.text for o in run_batch(corpus(SEED, N_CASES)) if o.kind == "OK"]
    assert len(accepted) > 200
    again = [(b"", b"hops:" + c.encode()) for c in accepted]
    lua = run_batch(again)
    assert lua == [Outcome("OK", "", c) for c in accepted]
    assert [run_python(s, c) for s, c in again] == lua


def test_reported_regressions() -> None:
    base = "#HOPS gpus=1 samples=1M batch-size=8 model=resnet18"
    cases = [
        (f"{base} lr=0.1e-99@1\n".encode(), None),  # was stored as lr=1e-100@1, which the engine could not read
        (b"#HOPS gpus=1 samples=1.5000000000000000001M batch-size=8 model=m\n", None),  # Lua rounded it to 1.5M
        (b"#HOPS\x0bgpus=1 samples=1M batch-size=8 model=m\n", None),  # vertical tab: Python's \s took it
        (b"#HOPS gpus=1\x85samples=1M batch-size=8 model=m\n", None),  # NEL: str.split() took it
        (b"#HOPS gpus=1 samples=1M\rbatch-size=8 model=m\n", None),  # carriage return: splitlines() took it
        (b"#" + b" " * 20000 + b"\n" + base.encode() + b"\n", None),  # 2.3 s in the old hook
        (b"#" + b" " * 40000 + b"\n" + base.encode() + b"\n", None),  # 8 s; now past the 32 KiB header
        (b"#" + b" " * 40000 + b"\nhostname\n", None),  # no #HOPS at all: not a Hops job
    ]
    py, disagreements = _compare(cases)
    assert disagreements == []
    assert [o.kind for o in py] == ["ERR", "ERR", "ERR", "ERR", "ERR", "OK", "ERR", "NONE"]
    assert py[6].key == "syntax" and "within the first 32768 bytes" in py[6].text
    assert py[0].key == "lr" and "outside 1e-9..1000" in py[0].text
    assert py[1].key == "samples" and "not a whole number" in py[1].text
    assert {o.key for o in py[2:5]} == {"syntax"}
    assert "line 1, byte 6: 0x0B is not allowed" in py[2].text


# ----- hypothesis ---------------------------------------------------------------------------------

_digits = st.text("0123456789", min_size=1, max_size=6)
_rates = st.builds(
    lambda i, f, e: i + (f".{f}" if f else "") + (f"e{e}" if e is not None else ""),
    st.text("0123456789", min_size=1, max_size=4), st.text("0123456789", max_size=12),
    st.one_of(st.none(), st.integers(-12, 4)),
)
_quantities = st.builds(lambda i, f, s: i + (f".{f}" if f else "") + s, _digits, st.text("0123456789", max_size=4),
                        st.sampled_from(["", "K", "M", "G"]))
_gpu_lists = st.lists(st.integers(1, 64), min_size=1, max_size=8, unique=True)


@st.composite
def directive_lines(draw: st.DrawFn) -> str:
    gpus = draw(_gpu_lists)
    tokens = [f"gpus={','.join(map(str, gpus))}", f"samples={draw(_quantities)}",
              f"batch-size={draw(st.integers(1, 70000))}", f"model={draw(st.sampled_from(['resnet50', 'a.b:c', 'bert-base']))}"]
    if draw(st.booleans()):
        tokens.append(f"lr={draw(_rates)}@{draw(st.sampled_from(gpus))}")
    if draw(st.booleans()):
        tokens.append(f"params={draw(_quantities)}")
    return "#HOPS " + " ".join(draw(st.permutations(tokens)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(directive_lines())
def test_python_canonical_form_is_a_fixed_point(line: str) -> None:
    try:
        parsed = parse_script(line + "\n")
    except Exception as exc:  # noqa: BLE001
        assert type(exc).__name__ == "DirectiveError", exc
        return
    assert parsed is not None
    canonical = parsed.canonical()
    again = HopsDirectives.from_canonical(canonical)
    assert again == parsed and again.canonical() == canonical


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.one_of(directive_lines().map(lambda s: s.encode() + b"\n"),
                          st.binary(max_size=80).map(lambda b: b"#HOPS " + b + b"\n"),
                          st.binary(max_size=200)), min_size=20, max_size=60))
def test_hypothesis_inputs_agree(scripts: list[bytes]) -> None:
    _, disagreements = _compare([(s, None) for s in scripts])
    assert disagreements == []


def test_the_longest_canonical_form_fits_and_parses_back() -> None:
    model = ".".join(["m" * 15] * 7) + ":" + "f" * 16
    assert len(model) == 128
    lr = ",".join(f"0.00000000{i}23456789012345@{1016 + i}" for i in range(1, 9))
    line = (f"#HOPS gpus=1017,1018,1019,1020,1021,1022,1023,1024 samples=1000000000000000 batch-size=65536\n"
            f"#HOPS model={model} lr={lr} params=10000000000000\n")
    longest = run_python(line.encode(), None)
    assert longest.kind == "OK" and len("hops:" + longest.text) <= 1024
    assert run_batch([(line.encode(), None), (b"", b"hops:" + longest.text.encode())]) == [longest, longest]
    too_long = line.replace(model, model + "x")
    assert run_python(too_long.encode(), None).key == "model"

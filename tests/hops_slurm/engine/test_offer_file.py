"""The offer file (hops_slurm.engine.offer_file): the Python reading is the hook's, byte for byte (the same odd
inputs through ``parse`` and through ``read_offer`` of hooks/hops_offer.lua in lua5.1 give the same verdict);
an offer too large for the hook is cut, worst nodes first, and said once; root writes it only into its own
directory, never through a link, replacing whatever non-regular file sits at its name."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hops_slurm.engine import offer_file
from hops_slurm.engine.offer_file import HEADER, MAX_BYTES, Offer, OfferWriter, closed, parse, publish, read
from hops_slurm.rootfile import UnsafeDirectory

OFFERS = Path(__file__).resolve().parents[3] / "hooks" / "hops_offer.lua"

# arg: the hook's offers module, then the case files; prints one verdict per case
RUNNER = r"""
local function split(s, sep)
	local out, start = {}, 1
	while true do
		local i = string.find(s, sep, start, true)
		if not i then table.insert(out, string.sub(s, start)) return out end
		table.insert(out, string.sub(s, start, i - 1))
		start = i + 1
	end
end
slurm = { SUCCESS = 0, ERROR = -1, log_user = function(...) end, log_info = function(...) end }
local hops = { split = split }
local ret = loadfile(arg[1])(hops, split, function(s) return s end, nil)
local reader = (type(ret) == "table" and ret.read_offer) or hops.read_offer
for i = 2, #arg do
	local o = reader(arg[i])
	if o == nil then
		print("none")
	else
		local names = {}
		for _, n in ipairs(o.nodes) do table.insert(names, n[1] .. ":" .. n[2]) end
		print(string.format("%d %d %s %s", o.as_of, o.expires, o.tres, table.concat(names, ",")))
	end
end
"""

GOOD = (f"{HEADER}\nas_of 100\nexpires 200\ntres gres/gpu:\nnode n1 4 hops\nnode n2 2 hops,gpu-b\n").encode()


def verdict(o: Offer | None) -> str:
    if o is None:
        return "none"
    return f"{int(o.as_of)} {int(o.expires)} {o.tres} " + ",".join(f"{n}:{k}" for n, k, _ in o.nodes)


def odd_inputs() -> list[bytes]:
    h = HEADER.encode()
    return [
        GOOD, b"", b"\n\n", h + b"\n", GOOD.replace(h, b"hops-offer 1"), GOOD.replace(h, h + b" "),
        b"\n\n" + GOOD, GOOD.replace(b"\n", b"\n\n"), GOOD.replace(b"\n", b"\r\n"),
        GOOD + b"as_of 1x\n", GOOD + b"as_of 5\n", b"as_of 1x\n".join([GOOD, b""]),
        GOOD.replace(b"as_of 100", b"as_of 1234567890123"), GOOD.replace(b"as_of 100", b"as_of 123456789012"),
        GOOD.replace(b"as_of 100", b"as_of -1"), GOOD.replace(b"as_of 100", b"as_of 1e3"),
        GOOD.replace(b"as_of 100", b"as_of  100"), GOOD.replace(b"as_of 100", b"as_of\t100"),
        GOOD.replace(b"as_of 100", b"as_of 100 7"), GOOD.replace(b"tres gres/gpu:", b"tres gres/gpu:a100:"),
        GOOD.replace(b"tres gres/gpu:", b"tres gres:gpu:"), GOOD.replace(b"tres gres/gpu:\n", b""),
        GOOD + b"node n3 1\n", GOOD + b"node n3 1 hops extra\n", GOOD + b"node n3 12345 hops\n",
        GOOD + b"node n3 0 hops\n", GOOD + b"node n3 0009 hops\n", GOOD + b"node n;3 1 hops\n",
        GOOD + b"node " + b"n" * 64 + b" 1 hops\n", GOOD + b"node " + b"n" * 65 + b" 1 hops\n",
        GOOD + b"node n3 1 hops,\n", GOOD + b"node n3 1 ,hops\n", GOOD + b"node n3 1 a,,b\n",
        GOOD + b"node n3 1 hops,hops\n", GOOD + b"node n3 1 " + b",".join([b"p"] * 64) + b"\n",
        GOOD + b"node n3 1 " + b",".join([b"p"] * 65) + b"\n",
        GOOD + b"node n3 1 " + b",".join([b"p" * 64] * 63) + b"\n",
        GOOD + b"node n3 1 h\xc3\xa9ps\n", GOOD + b"node n\xe9 1 hops\n", GOOD + b"   \n", GOOD + b"bogus 1\n",
        GOOD + b"node  n3  1  hops\n", GOOD + b"node n3 +1 hops\n", GOOD + b"node n3 1 hops\x00\n",
        GOOD + b"#comment\n", GOOD.replace(b"node n1 4 hops\n", b"") + b"x" * (MAX_BYTES - len(GOOD)),
        GOOD + b"x" * (MAX_BYTES + 1 - len(GOOD)),
        GOOD.rstrip(b"\n"), GOOD + b"".join(b"node m%d 1 hops\n" % i for i in range(4100)),
    ]


def test_the_python_reading_is_the_hooks_reading_on_odd_inputs(tmp_path: Path) -> None:
    lua = shutil.which("lua5.1")
    assert lua, "lua5.1 is needed (apt-get install lua5.1)"
    cases = odd_inputs()
    paths = []
    for i, data in enumerate(cases):
        paths.append(tmp_path / f"case{i}")
        paths[-1].write_bytes(data)
    runner = tmp_path / "runner.lua"
    runner.write_text(RUNNER)
    out = subprocess.run([lua, str(runner), str(OFFERS), *map(str, paths)], capture_output=True, text=True, check=True)
    hook = out.stdout.splitlines()
    # the canonical file first: the hook must read this very format (a skip here would hide a drift)
    assert hook[0] != "none", f"{OFFERS.name} does not read the offer format {HEADER!r} the engine writes"
    py = [verdict(parse(data)) for data in cases]
    assert len(hook) == len(cases)
    assert [(i, h, p) for i, (h, p) in enumerate(zip(hook, py)) if h != p] == []
    assert 5 < py.count("none") < len(cases) - 5  # the corpus has both verdicts


def test_an_offer_over_the_hooks_limits_is_cut_and_said_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    nodes = tuple((f"node{i:05d}", 8, ("hops", "gpu-b")) for i in range(5000))
    big = Offer(as_of=100.0, expires=200.0, tres="gres/gpu:", nodes=nodes)
    text, dropped = big.rendered()
    assert len(text.encode()) <= MAX_BYTES and dropped > 0
    got = parse(text.encode())
    assert got is not None and len(got.nodes) == 5000 - dropped and got.nodes == nodes[: 5000 - dropped]  # best kept
    writer = OfferWriter(tmp_path / "hops-offer")
    with caplog.at_level(logging.INFO, logger="hops_slurm.engine.offer_file"):
        writer.publish(big, 1.0)
        writer.publish(big, 2.0)
        writer.publish(Offer(as_of=100.0, expires=200.0, tres="gres/gpu:", nodes=nodes[:10]), 3.0)
    cut = [r for r in caplog.records if "left out" in r.getMessage()]
    assert len(cut) == 1 and str(dropped) in cut[0].getMessage()
    assert any("fits" in r.getMessage() for r in caplog.records)
    assert read(writer.path) is not None and len(read(writer.path).nodes) == 10  # type: ignore[union-attr]


def test_the_offer_goes_only_into_roots_own_directory_and_never_through_a_link(tmp_path: Path) -> None:
    good = Offer(as_of=100.0, expires=200.0, tres="gres/gpu:", nodes=(("n1", 4, ("hops",)),))
    etc = tmp_path / "etc"
    etc.mkdir(mode=0o755)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    # a link planted at the temporary name and at the offer's own name: neither is followed
    (etc / ".hops-offer.tmp").symlink_to(victim)
    (etc / "hops-offer").symlink_to(victim)
    publish(etc / "hops-offer", good)
    assert victim.read_text() == "precious\n" and not (etc / "hops-offer").is_symlink()
    assert read(etc / "hops-offer") == parse(good.render().encode())
    assert oct((etc / "hops-offer").stat().st_mode & 0o777) == "0o644"
    # a FIFO (the hook would block on it) or an empty directory at the name is replaced
    (etc / "hops-offer").unlink()
    os.mkfifo(etc / "hops-offer")
    publish(etc / "hops-offer", None)
    assert (etc / "hops-offer").read_text() == closed()
    (etc / "hops-offer").unlink()
    (etc / "hops-offer").mkdir()
    publish(etc / "hops-offer", None)
    assert (etc / "hops-offer").read_text() == closed()
    # a directory others may write into, or of another owner, is refused
    os.chmod(etc, 0o777)
    with pytest.raises(UnsafeDirectory):
        publish(etc / "hops-offer", good)
    os.chmod(etc, 0o755)
    if os.geteuid() == 0:
        os.chown(etc, 65534, 65534)
        with pytest.raises(UnsafeDirectory):
            publish(etc / "hops-offer", good)
    assert victim.read_text() == "precious\n"


def test_odd_inputs_cover_the_documented_limits() -> None:
    assert offer_file.MAX_PARTITIONS == 64 and offer_file.MAX_NODES == 4096 and MAX_BYTES == 65536

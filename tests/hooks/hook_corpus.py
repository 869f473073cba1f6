"""A seeded generator of #HOPS inputs for the differential tests: mostly near-valid scripts and comments,
then mutated with the bytes and shapes that broke the parsers before (line breaks other than ``\\n``,
whitespace other than space and tab, control and non-ASCII bytes, long digit runs, exponents, boundary
values, many or long lines, ``#HOPS`` look-alikes, commands before directives).

Deterministic for a given seed: the same cases on every run and machine.
"""

from __future__ import annotations

import random

SEP_BYTES = [b" ", b"\t", b"  ", b" \t "]
ODD_BYTES = [b"\r", b"\x0b", b"\x0c", b"\x00", b"\x1b", b"\x7f", b"\x85", b"\xa0", b"\xc2\xa0", b"\xe2\x80\x83",
             b"\xff", b"\xe3\x80\x80", b"\x1c", b"\x1d", b"\x1e", b"\x1f", b"\\", b"'", b'"', b"$(id)", b"`id`", b";"]

GPUS = ["1", "2", "1,2", "1,2,4,8", "8,4,2,1", "2-16", "1-4", "1-1024", "0", "1025", "1,1", "1,2,3,4,5,6,7,8",
        "1,2,3,4,5,6,7,8,9", "-1", "2-", "-2", "4-2", "1-2-3", "", ",", "1,", "01", "0000001", "00000001", "1.0",
        "1e1", "１", "16-16", "1-9", "3-5"]
LEVELS = ["2", "3", "4", "8", "9", "1", "0", "x", "04"]
QUANTITIES = ["1", "1M", "1.2M", "1.2345678M", "1.23456789M", "1.0000000001G", "1.5000000000000000001M", "10K",
              "3G", "0", "0.5", "1.", ".5", "1e6", "1000000000000000", "1000000000000001", "999999999999999",
              "1000000G", "1000001G", "10000000000000", "10000000000001", "0001M", "1,000", "1_000", "1k", "1MM",
              "000000000000000000000001", "0000000000000000000000001", "1.000000000000000000000M", "2.5K", "1.0"]
EPOCHS = ["1", "90", "100000", "100001", "0", "1.5", "3"]
BATCH = ["1", "64", "65536", "65537", "0", "-1", "8x"]
MODELS = ["resnet50", "bert-base", "gpt2-small", "mypkg.train:build", "a:b:c", "Resnet", "x" * 64, "x" * 65,
          "pkg." * 16 + "m:f", "pkg." * 15 + "m:f", "m:" + "f" * 65, "os:system", "_a._b:_c", "1bad", "a..b:c",
          "a:", ":f", "vit-small", "x.y-z_0"]
RATES = ["0.1", "0.05", "1", "1000", "1000.0", "1000.0000000001", "1001", "1e3", "1E3", "1e+3", "1e4", "0.1e-99",
         "1e-9", "1e-10", "0.000000001", "0.0000000009", "5e-5", "5e-05", "3E-4", "0", "0.0", "0e5", "1.",
         ".1", "1e", "1e-", "1e-1000", "1e-001", "0.123456789012345", "0.1234567890123456", "123.456789012345",
         "0.100000000000000000000", "000000000000000000000000000000.1", "0000000000000000000000000000000.1",
         "1.5e2", "2.50e-3", "nan", "inf", "-0.1", "+0.1", "0x1p-3", "1e-9" + "0" * 20, "9.99999999999999e2"]
COUNTS = ["1", "4", "8", "16", "0", "1025", "x", ""]
SCALES = ["linear", "sqrt", "log", "", "LINEAR"]
PARAMS = ["25.6M", "1", "10000000000000", "10000000000001", "0", "1.5"]
KEYS_ODD = ["colour", "GPUS", "gpus ", "$(id)", "a" * 33, "a" * 32, "lr-", "-lr", "x_y", "", "=", "gpus=1=2"]


def _token(r: random.Random) -> str:
    kind = r.random()
    if kind < 0.04:
        return r.choice(KEYS_ODD) + ("=" + r.choice(GPUS) if r.random() < 0.7 else "")
    key = r.choice(["gpus", "gpus", "samples", "samples", "epochs", "dataset-size", "batch-size", "model", "lr", "lr",
                    "lr-scale", "params", "levels"])
    if key == "gpus":
        value = r.choice(GPUS)
    elif key in ("samples", "dataset-size"):
        value = r.choice(QUANTITIES)
    elif key == "epochs":
        value = r.choice(EPOCHS)
    elif key == "batch-size":
        value = r.choice(BATCH)
    elif key == "model":
        value = r.choice(MODELS)
    elif key == "lr":
        n = r.choice([1, 1, 1, 2, 3])
        value = ",".join(f"{r.choice(RATES)}@{r.choice(COUNTS)}" if r.random() < 0.95 else r.choice(RATES)
                         for _ in range(n))
    elif key == "lr-scale":
        value = r.choice(SCALES)
    elif key == "params":
        value = r.choice(PARAMS)
    else:
        value = r.choice(LEVELS)
    return f"{key}={value}"


def _valid_tokens(r: random.Random) -> list[str]:
    gpus = r.choice(["1", "1,2", "2,4,8", "1-16", "2-16", "4"])
    tokens = [f"gpus={gpus}", f"batch-size={r.choice(['8', '64', '65536'])}", f"model={r.choice(MODELS[:4])}"]
    if r.random() < 0.5:
        tokens.append(f"samples={r.choice(QUANTITIES[:11])}")
    else:
        tokens += [f"epochs={r.choice(EPOCHS[:3])}", f"dataset-size={r.choice(QUANTITIES[:11])}"]
    if r.random() < 0.5:
        tokens.append(f"lr={r.choice(RATES[:12])}@{r.choice(['1', '4', '8'])}")
        if r.random() < 0.3:
            tokens.append(f"lr-scale={r.choice(SCALES[:2])}")
    if r.random() < 0.3 and "-" in gpus:
        tokens.append(f"levels={r.choice(LEVELS[:4])}")
    return tokens


def _line_of(r: random.Random, tokens: list[str]) -> bytes:
    lead = r.choice([b"", b"", b" ", b"\t", b"  \t"])
    marker = r.choice([b"#HOPS"] * 12 + [b"#HOPSX", b"#hops", b"# HOPS", b"#HOPS=", b"#HOPS\t", b"#HOPS:", b"##HOPS"])
    body = b"".join(r.choice(SEP_BYTES) + t.encode() for t in tokens)
    trail = r.choice([b"", b"", b"", b" ", b"\t", b"\r"])
    return lead + marker + body + trail


def _mutate(r: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    for _ in range(r.choice([1, 1, 2, 3])):
        i = r.randrange(len(data) + 1)
        op = r.random()
        odd = r.choice(ODD_BYTES) if op < 0.7 else bytes([r.randrange(256)])
        data = data[:i] + odd + data[i + (1 if r.random() < 0.5 else 0):]
    return data


def script_case(r: random.Random) -> tuple[bytes, bytes | None]:
    tokens = _valid_tokens(r) if r.random() < 0.6 else [_token(r) for _ in range(r.choice([1, 3, 4, 5, 6]))]
    if r.random() < 0.4:
        r.shuffle(tokens)
    lines: list[bytes] = []
    if r.random() < 0.8:
        lines.append(b"#!/bin/bash")
    for _ in range(r.choice([0, 1, 2])):
        lines.append(r.choice([b"#SBATCH -J demo", b"", b"   ", b"\t", b"# a comment #HOPS gpus=1", b"#SBATCH --time=1"]))
    groups = r.choice([1, 1, 2, 3])
    for g in range(groups):
        part = tokens[g::groups]
        lines.append(_line_of(r, part))
        if r.random() < 0.1:
            lines.append(r.choice([b"echo start", b"  srun x", b"\r", b"\x0b", b"\xc2\xa0# nbsp", b"", b" # ok"]))
    lines.append(b"srun python train.py")
    if r.random() < 0.2:
        lines.append(_line_of(r, [_token(r)]))
    eol = r.choice([b"\n"] * 16 + [b"\r\n", b"\r", b"\n\n"])
    script = eol.join(lines) + r.choice([b"\n", b"", eol])
    if r.random() < 0.3:
        script = _mutate(r, script)
    comment: bytes | None = None
    c = r.random()
    if c < 0.15:
        comment = r.choice([b"hops:", b"  hops:", b"\thops:", b"hops: ", b"HOPS:"]) + b" ".join(
            t.encode() for t in (_valid_tokens(r) if r.random() < 0.5 else [_token(r) for _ in range(3)]))
        if r.random() < 0.4:
            comment = _mutate(r, comment)
    elif c < 0.25:
        comment = r.choice([b"just a note", b"", b"hops", b"\x00hops:gpus=1", b"\xffhops:", b"x" * 5000])
    return script, comment


def long_case(r: random.Random) -> tuple[bytes, bytes | None]:
    """Inputs near the length caps (script, line, number of lines, comment)."""
    kind = r.randrange(8)
    base = "gpus=1 samples=1M batch-size=8 model=resnet18"
    if kind == 0:  # a #HOPS line of about the cap
        pad = r.choice([1024 - len("#HOPS " + base) - 1, 1024 - len("#HOPS " + base), 1024 - len("#HOPS " + base) + 1])
        return (b"#HOPS " + base.encode() + b" " * pad + b"\n", None)
    if kind == 1:  # many #HOPS lines
        n = r.choice([15, 16, 17, 40])
        return (b"#HOPS gpus=1\n" + b"#HOPS\n" * (n - 2) + b"#HOPS samples=1M batch-size=8 model=resnet18\n", None)
    if kind == 2:  # a long comment line of spaces before the directives
        return (b"#" + b" " * r.choice([1000, 20000, 70000]) + b"\n#HOPS " + base.encode() + b"\n", None)
    if kind == 3:  # hops: comments about the cap
        n = r.choice([1023, 1024, 1025]) - len("hops:" + base)
        return (b"#!/bin/bash\nhostname\n", b"hops:" + base.encode() + b" " * n)
    if kind == 4:  # a long run of digits
        return (f"#HOPS gpus=1 samples={'9' * r.choice([20, 24, 25, 400])} batch-size=8 model=m\n".encode(), None)
    if kind == 5:  # a header of many short comment lines, then the directives
        return (b"#\n" * r.choice([1000, 50000]) + b"#HOPS " + base.encode() + b"\n", None)
    if kind == 6:  # #HOPS lines after the first command
        return (b"echo hi\n#HOPS " + base.encode() + b"\n", None)
    return (b"#HOPS " + base.encode() + b" lr=0." + b"0" * r.choice([8, 9, 25, 200]) + b"1@1\n", None)


def corpus(seed: int, n: int) -> list[tuple[bytes, bytes | None]]:
    r = random.Random(seed)
    return [long_case(r) if r.random() < 0.03 else script_case(r) for _ in range(n)]

"""A batch script's ``#SBATCH`` options read as ``sbatch`` reads them, into the fields the submit hook sees.

Where it sits: in front of :mod:`hops_slurm.submit_policy` for ``hops-slurm directives check``: the hook
inside slurmctld gets ``job_desc`` already filled in by sbatch; the checker has only the script, so it
reads the script's header the way sbatch does (src/sbatch/opt.c, the same in 22.05, 24.11 and 26.05):

- lines end at ``\\n``; a line starting with ``#SBATCH`` (column 0) holds options; the header ends at the
  first line with a byte other than C's ``isspace`` before a ``#`` (a command); other lines are skipped;
- an option line is split like sbatch's ``_get_argument``: blanks separate, ``'`` and ``"`` quote,
  ``\\`` escapes one byte, an unquoted ``#`` starts a comment;
- the words are read like ``getopt_long`` with sbatch's options: ``-p gpu``, ``-pgpu``, ``-Hp gpu``,
  ``--partition=gpu``, ``--partition gpu``, unambiguous prefixes (``--part=gpu``); the last one wins.

Only the header is seen: options given on sbatch's command line or in ``SBATCH_*`` variables override it
and are not (docs/directives-grammar.md, "Existing GPU scripts"). Bounded: at most ``MAX_SCRIPT`` bytes
and ``MAX_WORDS`` option words are read; every loop is linear in the header.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hops_slurm.errors import HopsError

MAX_SCRIPT = 4 * 1024 * 1024  # Slurm's own cap on a batch script
MAX_WORDS = 10000
_ISSPACE = b" \t\n\v\f\r"

# sbatch's long options (22.05 to 26.05): R takes an argument, O an optional one (only as --opt=value),
# N none. Unknown options are an error, as in sbatch.
_LONG: dict[str, str] = {name: kind for kind, names in {
    "R": "account acctg-freq array batch bb bbf begin chdir cluster-constraint clusters comment constraint "
         "container container-id core-spec cores-per-socket cpu-freq cpus-per-gpu cpus-per-task deadline "
         "delay-boot dependency distribution error exclude export-file extra extra-node-info gid gpu-bind "
         "gpu-freq gpus gpus-per-node gpus-per-socket gpus-per-task gres gres-flags hint input job-name "
         "kill-on-invalid-dep licenses mail-type mail-user mcs-label mem mem-bind mem-per-cpu mem-per-gpu "
         "mincpus network nodefile nodelist nodes ntasks ntasks-per-core ntasks-per-gpu ntasks-per-node "
         "ntasks-per-socket ntasks-per-tres open-mode output partition power prefer priority profile qos "
         "reservation segment signal sockets-per-node switches thread-spec threads-per-core time time-min "
         "tmp tres-bind tres-per-task uid wait-all-nodes wckey wrap",
    "O": "exclusive export get-user-env nice no-kill oom-kill-step propagate",
    "N": "contiguous help hold ignore-pbs no-requeue overcommit oversubscribe parsable quiet reboot requeue "
         "spread-job test-only usage use-min-nodes verbose version wait",
}.items() for name in names.split()}
_SHORT_ARG = set("aAbBcCdDeFGiJLmMnNopqStwx")
_SHORT_FLAG = set("hHIkOQsvVW")
_SHORT_LONG = {"a": "array", "A": "account", "b": "begin", "B": "extra-node-info", "c": "cpus-per-task",
               "C": "constraint", "d": "dependency", "D": "chdir", "e": "error", "F": "nodefile", "G": "gpus",
               "H": "hold", "i": "input", "J": "job-name", "L": "licenses", "m": "distribution",
               "M": "clusters", "n": "ntasks", "N": "nodes", "o": "output", "p": "partition", "q": "qos",
               "S": "core-spec", "t": "time", "w": "nodelist", "x": "exclude"}


class SbatchError(HopsError):
    """sbatch itself would refuse the script (an unknown or ambiguous option, a missing argument)."""


@dataclass
class Header:
    """The options of a script's header: the last value of each long option name, and the words in order."""

    options: dict[str, str] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)

    def get(self, name: str) -> str | None:
        return self.options.get(name)


def option_words(script: bytes) -> list[str]:
    """The option words of the ``#SBATCH`` lines before the first command (sbatch's ``_opt_batch_script``)."""
    words: list[str] = []
    for line in script[:MAX_SCRIPT].split(b"\n"):
        if line.startswith(b"#SBATCH"):
            words += _arguments(line[7:])
            if len(words) > MAX_WORDS:
                raise SbatchError(f"more than {MAX_WORDS} #SBATCH option words")
            continue
        stripped = line.lstrip(_ISSPACE)
        if stripped and not stripped.startswith(b"#"):
            break
    return words


def _arguments(rest: bytes) -> list[str]:
    """One ``#SBATCH`` line's words, split as sbatch's ``_get_argument`` splits them."""
    out: list[str] = []
    i, n = 0, len(rest)
    while True:
        while i < n and rest[i] in _ISSPACE:
            i += 1
        if i >= n:
            return out
        word = bytearray()
        quote: int | None = None
        escape = False
        while i < n and (quote is not None or rest[i] not in _ISSPACE):
            c = rest[i]
            i += 1
            if escape:
                escape = False
            elif c == 0x5C:  # backslash
                escape = True
                continue
            elif quote is not None:
                if c == quote:
                    quote = None
                    continue
            elif c in (0x22, 0x27):
                quote = c
                continue
            elif c == 0x23:  # an unquoted '#': the rest of the line is a comment
                if word:
                    out.append(word.decode("utf-8", "surrogateescape"))
                return out
            word.append(c)
        out.append(word.decode("utf-8", "surrogateescape"))


def _long_name(given: str) -> str:
    if given in _LONG:
        return given
    matches = [name for name in _LONG if name.startswith(given)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SbatchError(f"unrecognized option '--{given[:60]}'")
    raise SbatchError(f"option '--{given[:60]}' is ambiguous ({', '.join(sorted(matches)[:6])})")


def read_header(script: bytes) -> Header:
    """The script's ``#SBATCH`` options, parsed like ``getopt_long`` with sbatch's table."""
    header = Header()
    words = option_words(script)
    header.words = words
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        if w == "--":
            break
        if w.startswith("--"):
            name, eq, value = w[2:].partition("=")
            long = _long_name(name)
            kind = _LONG[long]
            if kind == "N" and eq:
                raise SbatchError(f"option '--{long}' doesn't allow an argument")
            if kind == "R" and not eq:
                if i >= len(words):
                    raise SbatchError(f"option '--{long}' requires an argument")
                value = words[i]
                i += 1
            header.options[long] = value if (eq or kind == "R") else ""
        elif w.startswith("-") and len(w) > 1:
            j = 1
            while j < len(w):
                c = w[j]
                j += 1
                if c in _SHORT_FLAG:
                    header.options[_SHORT_LONG.get(c, c)] = ""
                elif c in _SHORT_ARG:
                    value = w[j:]
                    if not value:
                        if i >= len(words):
                            raise SbatchError(f"option requires an argument -- '{c}'")
                        value = words[i]
                        i += 1
                    header.options[_SHORT_LONG[c]] = value
                    break
                else:
                    raise SbatchError(f"invalid option -- '{c[:1]}'")
        else:
            raise SbatchError(f"invalid directive in the script's #SBATCH lines: {w[:60]!r}")
    return header


def _gres(value: str) -> str:
    """``--gres=gpu:2,nvme:1`` as sbatch hands it to slurmctld: each entry with its ``gres/`` prefix."""
    if value.lower() == "none":
        return ""
    return ",".join(e if e.startswith(("gres:", "gres/")) or "=" in e else f"gres/{e}" for e in value.split(",") if e)


def _gpus(value: str) -> str:
    return f"gres/gpu:{value}"


def _nodes(value: str) -> int | None:
    low = value.split("-", 1)[0].split(":", 1)[0]
    return int(low) if low.isdigit() and len(low) <= 7 else None


def request_fields(header: Header) -> dict[str, object]:
    """The ``job_desc`` fields the hook reads, from the header (keys of :class:`submit_policy.Request`)."""
    o = header.options
    out: dict[str, object] = {}
    if "partition" in o:
        out["partition"] = o["partition"]
    if "reservation" in o:
        out["reservation"] = o["reservation"]
    if "comment" in o:
        out["comment"] = o["comment"].encode("utf-8", "surrogateescape")
    per_node = [x for x in (_gres(o["gres"]) if "gres" in o else "",
                            _gpus(o["gpus-per-node"]) if "gpus-per-node" in o else "") if x]
    if per_node:
        out["tres_per_node"] = ",".join(per_node)
    if "gpus" in o:
        out["tres_per_job"] = _gpus(o["gpus"])
    if "gpus-per-task" in o:
        out["tres_per_task"] = _gpus(o["gpus-per-task"])
    if "tres-per-task" in o:
        out["tres_per_task"] = ",".join(x for x in (out.get("tres_per_task"), o["tres-per-task"]) if x)
    if "gpus-per-socket" in o:
        out["tres_per_socket"] = _gpus(o["gpus-per-socket"])
    if "nodes" in o:
        n = _nodes(o["nodes"])
        if n is not None:
            out["min_nodes"] = n
    return out

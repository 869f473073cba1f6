"""Every file path, module and docs section that the docs, docstrings and comments cite exists (issue 25, item 5).

A restructuring that moves a module, or a docs edit that renames a section, leaves citations pointing
nowhere; a reader following one finds nothing. Read: every ``.py``, ``.md``, ``.toml`` and ``.lua`` file
of the checkout (so the docstrings and comments of hops_slurm/, planner/, estimator/ and profiler/, all of
docs/ and README.md). Four kinds of citation are checked:

- file paths, repository-relative as this project writes them (``hops_slurm/engine/cycle.py``,
  ``docs/results/moves.md``), anywhere in those files (the benchmarks' output text too);
- folders of the source trees (``hops_slurm/tools/bench/``, ``tests/hops_slurm/core/``; not docs/, where the
  benchmarks name the folders they will write);
- dotted module names in docs, docstrings and comments (``hops_slurm.core.rounds.run_rounds``,
  ``:mod:`estimator.honesty```): the longest prefix that is a module must exist, and the name after it must
  be defined at that module's top level (a function, class, assignment, import or submodule);
- docs sections, cited as ``docs/design.md, "Moves that pay"`` (also with single quotes, in parentheses,
  for the results files under docs/results/ and for README.md): the text must match (a prefix of, or a
  part of) one of that file's headings or of its bold paragraph labels (``**Lost:**``).
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP = ("hops_slurm", "planner", "estimator", "profiler", "docs", "tests", "etc", "hooks")
PACKAGES = ("hops_slurm", "planner", "estimator", "profiler")
SKIP = {".git", ".venv", "var", "build", "node_modules", "__pycache__", ".hypothesis", ".pytest_cache"}
PATH = re.compile(r"(?<![\w/.-])((?:" + "|".join(TOP) + r")/[\w/.-]*\w\.(?:py|md|toml|json|jsonl|lua|csv|sh))")
FOLDER = re.compile(r"(?<![\w/.<-])((?:" + "|".join(t for t in TOP if t != "docs") + r")/(?:[\w.-]+/)*[\w.-]*\w/)(?![\w<{*])")
MODULE = re.compile(r"(?<![\w/.-])((?:" + "|".join(PACKAGES) + r")(?:\.[A-Za-z_]\w*)+)")
SUFFIXES = {"py", "md", "toml", "json", "jsonl", "lua", "csv", "sh", "txt", "png", "sqlite", "log"}
SECTION = re.compile(r"(docs/[\w/-]+\.md|(?<![\w/])README\.md)(?:,|:)?\s*\(?\s*(?:section\s*)?"
                     r"(?:[\"“]([^\"”\n]{3,80})[\"”]|'([^'\n]{3,80})')")


def _sources() -> list[Path]:
    out = []
    for p in ROOT.rglob("*"):
        rel = p.relative_to(ROOT)
        if p.suffix in (".py", ".md", ".toml", ".lua") and not SKIP.intersection(rel.parts) \
                and not str(rel).endswith(".egg-info") and p.is_file():
            out.append(p)
    return out


def _headings(doc: Path) -> list[str]:
    """A Markdown file's headings and bold paragraph labels (``**Lost:** ...``), lower case."""
    lines = doc.read_text().splitlines()
    heads = [re.sub(r"^#+\s*", "", line).strip().lower() for line in lines if line.startswith("#")]
    return heads + [m.group(1).strip().lower() for line in lines if (m := re.match(r"\*\*([^*]{3,80}?)[.:]?\*\*", line))]


def _prose(path: Path) -> str:
    """What of a file is written for a reader: a Python module's docstrings and comments, any other file whole."""
    text = path.read_text(errors="replace")
    if path.suffix != ".py":
        return text
    tree = ast.parse(text)
    parts = [ast.get_docstring(node, clean=False) or "" for node in ast.walk(tree)
             if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    parts += [tok.string for tok in tokenize.generate_tokens(io.StringIO(text).readline) if tok.type == tokenize.COMMENT]
    return "\n".join(parts)


@functools.cache
def _top_level_names(path: Path) -> frozenset[str]:
    """The names a module defines or imports at its top level (and under its top-level ``if``/``try``)."""
    names: set[str] = set()
    body = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while body:
        node = body.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            body.extend([*node.body, *node.orelse, *getattr(node, "finalbody", []),
                         *(s for h in getattr(node, "handlers", []) for s in h.body)])
    return frozenset(names)


def module_problem(dotted: str, root: Path = ROOT) -> str | None:
    """Why ``dotted`` (``pkg.mod.name.attr``) names nothing in the checkout at ``root``, or None."""
    parts = dotted.split(".")
    where: Path | None = None
    used = 0
    for i in range(1, len(parts) + 1):
        base = root.joinpath(*parts[:i])
        if (base / "__init__.py").is_file() or (i == 1 and base.is_dir()):
            where, used = base / "__init__.py", i
        elif base.with_suffix(".py").is_file():
            where, used = base.with_suffix(".py"), i
            break
        else:
            break
    if where is None or used == 1 and len(parts) > 1 and not (root / parts[0] / parts[1]).exists() \
            and not (root / parts[0] / "__init__.py").is_file():
        return "no such module"
    if used == len(parts):
        return None
    if not where.is_file():
        return f"no module {'.'.join(parts[: used + 1])}"
    name = parts[used]
    return None if name in _top_level_names(where) else f"{where.relative_to(root)} defines no {name!r}"


def test_every_cited_file_path_exists() -> None:
    missing = sorted({f"{m.group(1)} (cited in {src.relative_to(ROOT)})"
                      for src in _sources() for m in PATH.finditer(src.read_text(errors="replace"))
                      if not (ROOT / m.group(1)).exists()})
    assert missing == [], "\n".join(missing)


def test_every_cited_folder_exists() -> None:
    cited, missing = 0, set()
    for src in _sources():
        for m in FOLDER.finditer(src.read_text(errors="replace")):
            cited += 1
            if not (ROOT / m.group(1)).is_dir():
                missing.add(f"{m.group(1)} (cited in {src.relative_to(ROOT)})")
    assert cited > 20  # the pattern still finds the project's citations
    assert sorted(missing) == [], "\n".join(sorted(missing))


def test_every_cited_module_exists() -> None:
    cited, missing = 0, set()
    for src in _sources():
        for m in MODULE.finditer(_prose(src)):
            if m.group(1).rsplit(".", 1)[-1] in SUFFIXES:  # a file name (``estimator.md``), not a module
                continue
            cited += 1
            if (problem := module_problem(m.group(1).rstrip("."))) is not None:
                missing.add(f"{m.group(1)}: {problem} (cited in {src.relative_to(ROOT)})")
    assert cited > 100  # the pattern still finds the project's citations
    assert sorted(missing) == [], "\n".join(sorted(missing))


def test_every_cited_docs_section_exists() -> None:
    docs = [*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    heads = {str(d.relative_to(ROOT)): _headings(d) for d in docs}
    cited, missing = 0, []
    for src in _sources():
        for m in SECTION.finditer(src.read_text(errors="replace")):
            cited += 1
            doc, section = m.group(1), (m.group(2) or m.group(3)).strip().lower()
            if not any(h.startswith(section) or section in h for h in heads.get(doc, [])):
                missing.append(f'{doc}, "{m.group(2) or m.group(3)}" (cited in {src.relative_to(ROOT)})')
    assert cited > 10  # the pattern still finds the project's citations
    assert missing == [], "\n".join(missing)


def test_the_checks_see_a_missing_path_module_folder_and_section(tmp_path: Path) -> None:
    # built from pieces, so that this file itself cites nothing missing
    text = "see hops_slurm/engine/" + "nowhere.py and docs/" + 'design.md, "A section nobody wrote"'
    assert [m.group(1) for m in PATH.finditer(text)] == ["hops_slurm/engine/" + "nowhere.py", "docs/" + "design.md"]
    assert not (ROOT / "hops_slurm" / "engine" / "nowhere.py").exists()
    (doc, section, _), = [m.groups() for m in SECTION.finditer(text)]
    assert doc == "docs/" + "design.md" and not any(section.lower() in h for h in _headings(ROOT / "docs" / "design.md"))
    quoted = "docs/" + "design.md, 'Principles' and README" + '.md ("Nothing here")'
    assert [(m.group(1), m.group(2) or m.group(3)) for m in SECTION.finditer(quoted)] == [
        ("docs/" + "design.md", "Principles"), ("README" + ".md", "Nothing here")]
    assert [m.group(1) for m in FOLDER.finditer("in hops_slurm/" + "gone/ and etc/clusters/<name>.toml")] == [
        "hops_slurm/" + "gone/"]
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("from pkg.sub import mod\n")
    (tmp_path / "pkg" / "sub" / "mod.py").write_text("import time\nX = 1\nclass C:\n    y = 2\ndef f(): ...\n")
    for ok in ("pkg.sub", "pkg.sub.mod", "pkg.sub.mod.C.y", "pkg.sub.mod.f", "pkg.sub.mod.time.time", "pkg.sub.mod.X"):
        assert module_problem(ok, tmp_path) is None, ok
    assert module_problem("pkg.sub.gone", tmp_path) == "pkg/sub/__init__.py defines no 'gone'"
    assert module_problem("pkg.sub.mod.g", tmp_path) == "pkg/sub/mod.py defines no 'g'"
    assert module_problem("pkg.other.mod", tmp_path) is not None

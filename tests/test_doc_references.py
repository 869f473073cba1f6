"""Every file path and docs section that the docs, docstrings and comments cite exists (issue 25, item 5).

A restructuring that moves a module, or a docs edit that renames a section, leaves citations pointing
nowhere; a reader following one finds nothing. Paths are the repository-relative ones this project writes
(``hops_slurm/engine/cycle.py``, ``docs/results/moves.md``); sections are cited as
``docs/design.md, "Moves that pay"`` and must match (a prefix of) one of that file's headings.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP = ("hops_slurm", "planner", "estimator", "profiler", "docs", "tests", "etc", "hooks")
SKIP = {".git", ".venv", "var", "build", "node_modules", "__pycache__"}
PATH = re.compile(r"(?<![\w/.-])((?:" + "|".join(TOP) + r")/[\w/.-]*\w\.(?:py|md|toml|json|jsonl|lua|csv|sh))")
SECTION = re.compile(r"docs/(\w+\.md)(?:,|:)?\s*(?:section\s*)?[\"“]([^\"”\n]{3,80})[\"”]")


def _sources() -> list[Path]:
    out = []
    for p in ROOT.rglob("*"):
        rel = p.relative_to(ROOT)
        if p.suffix in (".py", ".md", ".toml", ".lua") and not SKIP.intersection(rel.parts) \
                and not str(rel).endswith(".egg-info") and p.is_file():
            out.append(p)
    return out


def _headings(doc: Path) -> list[str]:
    return [re.sub(r"^#+\s*", "", line).strip().lower() for line in doc.read_text().splitlines() if line.startswith("#")]


def test_every_cited_file_path_exists() -> None:
    missing = sorted({f"{m.group(1)} (cited in {src.relative_to(ROOT)})"
                      for src in _sources() for m in PATH.finditer(src.read_text(errors="replace"))
                      if not (ROOT / m.group(1)).exists()})
    assert missing == [], "\n".join(missing)


def test_every_cited_docs_section_exists() -> None:
    heads = {d.name: _headings(d) for d in (ROOT / "docs").glob("*.md")}
    cited, missing = 0, []
    for src in _sources():
        for m in SECTION.finditer(src.read_text(errors="replace")):
            cited += 1
            doc, section = m.group(1), m.group(2).strip().lower()
            if not any(h.startswith(section) or section in h for h in heads.get(doc, [])):
                missing.append(f'docs/{doc}, "{m.group(2)}" (cited in {src.relative_to(ROOT)})')
    assert cited > 10  # the pattern still finds the project's citations
    assert missing == [], "\n".join(missing)


def test_the_checks_see_a_missing_path_and_a_missing_section() -> None:
    # built from pieces, so that this file itself cites nothing missing
    text = "see hops_slurm/engine/" + "nowhere.py and docs/" + 'design.md, "A section nobody wrote"'
    assert [m.group(1) for m in PATH.finditer(text)] == ["hops_slurm/engine/" + "nowhere.py", "docs/" + "design.md"]
    assert not (ROOT / "hops_slurm" / "engine" / "nowhere.py").exists()
    (doc, section), = [(m.group(1), m.group(2)) for m in SECTION.finditer(text)]
    assert doc == "design.md" and not any(section.lower() in h for h in _headings(ROOT / "docs" / doc))

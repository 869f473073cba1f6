"""Every ``hops-slurm`` subcommand's ``--help`` opens with a description of what it does (issue 26), and
``config --help`` says how its two verbs differ."""

from __future__ import annotations

import argparse

import pytest

from hops_slurm.cli import build_parser, main


def subcommands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_the_subcommands_are_found() -> None:
    assert {"config", "daemon", "demo", "directives", "minicluster", "queue", "report", "simulate", "whatif"} <= set(subcommands())


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_subcommand_help_has_a_description(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    description = subcommands()[name].description
    assert description and len(description.split()) >= 6, f"`hops-slurm {name} --help` has no description"
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    # argparse prints: usage (one or more lines), a blank line, then the description
    after_usage = text.split("\n\n", 1)[1]
    assert " ".join(after_usage.split()).startswith(" ".join(description.split())[:40])


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_positional_choice_is_explained(name: str) -> None:
    """A verb argument (``config check|show``, ``minicluster up|down|...``) says what each verb does."""
    for action in subcommands()[name]._actions:
        if action.option_strings or not action.choices:
            continue
        assert action.help, f"`hops-slurm {name}`: {action.dest} has no help"
        for verb in action.choices:
            assert f"{verb}:" in action.help, f"`hops-slurm {name}`: {verb} is not explained"


def test_config_help_says_how_check_and_show_differ(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["config", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "`check` says OK or names every bad key" in text
    assert "`show` validates the same way, then prints the whole configuration as JSON" in text

"""The CLI reference: every command and subcommand of the argparse parser, with each
argument's flags, value, default and help, and the exit codes every command shares."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator

from distkpi_cli.reference.schema_tables import cell

USAGE_WIDTH = "100"  # argparse wraps usage at $COLUMNS: fixed, so the page is the same anywhere


def commands(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Every (sub)command's parser, depth first in the order they were added."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from commands(sub)


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
    ]


def flags(action: argparse.Action) -> str:
    if action.option_strings:
        return ", ".join(f"`{o}`" for o in action.option_strings)
    return f"`{action.metavar or action.dest}`"


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.choices is not None:
        return "one of " + ", ".join(f"`{c}`" for c in action.choices)
    metavar = action.metavar or (action.dest.upper() if action.option_strings else "")
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    more = {"+": " (one or more)", "*": " (any number)", "?": " (optional)"}.get(
        str(action.nargs), ""
    )
    if isinstance(action, argparse._AppendAction):
        more = " (repeatable)"
    return f"`{metavar}`{more}" if metavar else more.strip()


def _default(action: argparse.Action) -> str:
    if action.required or action.default in (None, argparse.SUPPRESS, False):
        return ""
    if isinstance(action, argparse._VersionAction):
        return ""
    return f"`{action.default}`"


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    text = action.help or ""
    if text == argparse.SUPPRESS:
        return ""
    formatter = parser._get_formatter()
    return cell(formatter._expand_help(action) if "%" in text else text)


def section(parser: argparse.ArgumentParser) -> str:
    title = parser.prog
    out = [f"## `{title}`", ""]
    if parser.description:
        out += [cell(parser.description), ""]
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = USAGE_WIDTH
    try:
        usage = parser.format_usage().strip()
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    out += ["```text", usage, "```", ""]
    args = arguments(parser)
    if args:
        out += [
            "| argument | value | default | required | meaning |",
            "| --- | --- | --- | --- | --- |",
        ]
        for action in args:
            required = "yes" if action.required or not action.option_strings else "no"
            if action.nargs in ("*", "?"):
                required = "no"
            out.append(
                f"| {flags(action)} | {_value(action)} | {_default(action)} | {required} "
                f"| {_help(parser, action)} |"
            )
        out.append("")
    return "\n".join(out)


EXIT_CODES = """\
## Exit codes

Every command exits with one of these (the value a command's own description adds, such as
`distkpi local`'s `error` verdict, is one of them too):

| code | when |
| --- | --- |
| {ok} | success; a verdict of `success` or `failure` is a success of the command |
| {failure} | something it relies on failed: AWS or GitHub refused or cannot be reached, \
a run could not be read, an `error` verdict |
| {usage} | its arguments name nothing usable: no run folder, suite or history file, no \
table, no such run or commit, a local state folder that is missing, damaged or in use by \
another stack, AWS without a region or credentials, or argparse refused the command line |

The error is one line on stderr that names the input and what to do (after the command's
usage when argparse refused it); a command given `--json` also prints `{{"error": "<that
line>"}}` as its one JSON document on stdout.
"""


def page() -> str:
    from distkpi_cli.commands.common import FAILURE, USAGE_ERROR
    from distkpi_cli.main import build_parser

    parser = build_parser()
    head = (
        "# The `distkpi` command line\n\n"
        "Every command, subcommand and option of `distkpi`, written from its parser "
        "(`distkpi COMMAND --help` says the same).\n\n"
        + EXIT_CODES.format(ok=0, failure=FAILURE, usage=USAGE_ERROR)
    )
    return head + "\n" + "\n".join(section(p) for p in commands(parser))

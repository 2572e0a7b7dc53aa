"""MkDocs hook: the Reference page's tables are generated from the code, so they cannot
disagree with it. A placeholder line in a page is replaced by its table when the page is
built:

- ``<!-- tvmperf:options -->``: every row of ``OPTIONS`` (pytest_tvmperf/config/options.py):
  command-line flag, ini key, environment variable, marker keywords and help text;
- ``<!-- tvmperf:markers -->``: every ``@pytest.mark.tvmperf`` keyword and the option it belongs to;
- ``<!-- tvmperf:env -->``: the environment variables of the options;
- ``<!-- tvmperf:command -->``: ``tvmperf --help`` and each subcommand's help, from its argparse parser.

An unknown ``<!-- tvmperf:... -->`` placeholder fails the build.
"""

from __future__ import annotations

import io
import os
import re
from contextlib import redirect_stdout

PLACEHOLDER = re.compile(r"^<!-- tvmperf:([a-z-]+) -->$", re.MULTILINE)


def _cell(text: str) -> str:
    """Text for a table cell: pipes escaped, and ``<peer>`` kept as text (not an HTML tag)."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|").replace("\n", " ")


def _metavar(opt) -> str:
    if opt.metavar:
        return opt.metavar
    name = getattr(opt.parse, "__name__", "")
    if name in ("parse_bool", "parse_switch"):
        return "on|off"
    if "int" in name or name.endswith("_ms") or name.endswith("_timeout"):
        return "N"
    return "VALUE"


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def options_table() -> str:
    """One entry per row of OPTIONS (a definition list): the flag, then where else it is set
    (ini key, environment variable, marker keywords), then its help text."""
    from pytest_tvmperf.config.options import OPTIONS

    out = []
    for opt in OPTIONS:
        flag = opt.flag if opt.switch else f"{opt.flag}={_metavar(opt)}"
        where = [f"ini `{opt.dest}`" if opt.ini else "command line only"]
        if opt.env:
            where.append(f"environment `{opt.env}`")
        if opt.marker_keys:
            where.append("marker " + ", ".join(f"`{k}`" for k in opt.marker_keys))
        out += [f"`{flag}`", f":   {' · '.join(where)}", "", f"    {_cell(opt.help)}", ""]
    return "\n".join(out)


def markers_table() -> str:
    from pytest_tvmperf.config.options import OPTIONS

    roles = {"sets": "sets it for this test (the command line still wins)",
             "narrows": "the values this test supports; it runs those the run selects",
             "adds": "times that peer for this test and gates TVM against it"}
    rows = ["| keyword | option | what it does |", "|---|---|---|"]
    for opt in OPTIONS:
        for key in opt.marker_keys:
            rows.append(f"| `{key}` | `{opt.flag}` | {_cell(roles.get(opt.marker_role, ''))} |")
    return "\n".join(rows)


def env_table() -> str:
    from pytest_tvmperf.config.options import OPTIONS

    rows = ["| variable | same as | precedence |", "|---|---|---|"]
    for opt in OPTIONS:
        if opt.env:
            rows.append(f"| `{opt.env}` | `{opt.flag}` | command line > environment > ini |")
    return "\n".join(rows)


def command_help() -> str:
    import argparse

    from pytest_tvmperf.command.cli import build_parser

    os.environ["COLUMNS"] = "100"  # argparse wraps at the terminal's width: fix it
    parser = build_parser()
    blocks = [("tvmperf", parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            blocks += [(f"tvmperf {name}", sub) for name, sub in action.choices.items()]
    out = []
    for title, p in blocks:
        out += [f"### `{title}`", "", "```text", p.format_help().rstrip(), "```", ""]
    return "\n".join(out)


GENERATORS = {"options": options_table, "markers": markers_table, "env": env_table, "command": command_help}


def on_page_markdown(markdown: str, page, config, files) -> str:
    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_path}: unknown placeholder <!-- tvmperf:{name} --> "
                             f"(known: {', '.join(GENERATORS)})")
        return GENERATORS[name]()

    return PLACEHOLDER.sub(replace, markdown)

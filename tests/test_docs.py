"""The documentation site (docs/, mkdocs.yml) builds in strict mode, and every example the
guide includes (docs/examples/*.py) records its baselines and then passes the gate, as a
user's project would (issue 26)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXAMPLES = sorted((DOCS / "examples").glob("test_*.py"))
#: how many test ids each example has (one executor each, unless it says more)
IDS = {"test_relax_nn_module.py": 2, "test_tvmscript.py": 2}


def _mkdocs() -> list[str]:
    pytest.importorskip("mkdocs", reason="mkdocs is in the test extra: pip install -e '.[test]'")
    pytest.importorskip("material", reason="mkdocs-material is in the test extra: pip install -e '.[test]'")
    return [sys.executable, "-m", "mkdocs"]


def test_the_site_builds_in_strict_mode(tmp_path: Path):
    """A broken link, a missing page, a bad snippet or any other warning fails the build."""
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's notice about its successor, printed on every build
    result = subprocess.run(
        [*_mkdocs(), "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    reference = (site / "reference" / "index.html").read_text(encoding="utf-8")
    from pytest_tvmperf.config.options import OPTIONS

    for option in OPTIONS:  # the reference is generated from the option table: every row is there
        assert option.flag in reference, option.flag
    for example in EXAMPLES:  # each example is included whole, from its file
        page = (site / "workloads" / "index.html").read_text(encoding="utf-8")
        assert f"docs/examples/{example.name}" in page, example.name


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.glob("*.md"))
    assert pages and all(page in nav for page in pages), pages


def _anchors(page: Path) -> set[str]:
    """The anchors of a page's headings: the slugs MkDocs and GitHub both make (the pages set no ids)."""
    from markdown.extensions.toc import slugify

    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {slugify(h, "-") for h in re.findall(r"^#+ (.*)$", text, re.MULTILINE)}


def test_the_readme_is_one_screen_and_links_into_the_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    links = re.findall(r"\]\((docs/[^)#]+)(?:#([^)]+))?\)", readme)
    assert len({page for page, _ in links}) >= 9  # a link to every page
    for page, anchor in links:  # relative links, so they work on GitHub too
        assert (ROOT / page).is_file(), page
        assert not anchor or anchor in _anchors(ROOT / page), f"{page}#{anchor}"


def test_the_two_commands_are_the_readmes_first_lines():
    """The README keeps the two commands exactly, on its first screen."""
    head = "\n".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:16])
    assert (
        'python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 -e ".[peers]" && '
        ".venv/bin/python -m pytest tests/perf"
    ) in head
    assert (
        'python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 -e ".[test]" && .venv/bin/python -m pytest -n 2\n'
    ) in head


def test_the_ci_workflow_uses_only_real_options():
    yaml = pytest.importorskip("yaml")  # PyYAML comes with mkdocs
    from pytest_tvmperf.config.options import OPTIONS

    text = (DOCS / "examples" / "github-workflow.yml").read_text(encoding="utf-8")
    workflow = yaml.safe_load(text)
    assert workflow["jobs"]["perf"]["steps"]
    flags = {o.flag for o in OPTIONS}
    used = set(re.findall(r"--tvmperf-[a-z-]+", text))
    assert used and used <= flags, used - flags


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_records_then_gates(project, example: Path):
    """Every example of "Writing workloads", as a user's test file: record, then gate."""
    if "onnx" in example.name:
        pytest.importorskip("onnx")
        pytest.importorskip("onnxruntime")
    if "torch" in example.name:
        pytest.importorskip("torch")
    shutil.copy(example, project.pytester.path / example.name)
    ids = IDS.get(example.name, 1)

    def run(*args: str) -> pytest.RunResult:  # in a process of its own, as a user runs it (torch imports once)
        return project.pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, example.name)

    run("--tvmperf-update").assert_outcomes(passed=ids)
    assert len(project.baselines(example.stem)["tests"]) == ids
    run().assert_outcomes(passed=ids)


def _hook():
    import importlib.util

    spec = importlib.util.spec_from_file_location("tvmperf_docs_reference", DOCS / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _render(hook, text: str) -> str:
    from types import SimpleNamespace

    return hook.on_page_markdown(text, SimpleNamespace(file=SimpleNamespace(src_path="reference.md")), None, None)


def test_a_new_option_appears_in_the_reference_by_itself(monkeypatch):
    """The reference cannot drift: a row added to OPTIONS is documented with no edit to docs/."""
    from pytest_tvmperf.config import options

    new = options.Option(
        "tvmperf_new_thing",
        "new_thing",
        "does a <new> thing",
        env="TVMPERF_NEW_THING",
        marker_keys=("new_thing",),
        marker_role="sets",
    )
    monkeypatch.setattr(options, "OPTIONS", (*options.OPTIONS, new))
    page = _render(_hook(), (DOCS / "reference.md").read_text(encoding="utf-8"))
    assert (
        "- `--tvmperf-new-thing=VALUE`: does a &lt;new&gt; thing (ini `tvmperf_new_thing` · environment "
        "`TVMPERF_NEW_THING` · marker `new_thing`)"
    ) in page
    assert "does a &lt;new&gt; thing" in page
    assert "| `TVMPERF_NEW_THING` | `--tvmperf-new-thing` |" in page
    assert "| `new_thing` | `--tvmperf-new-thing` |" in page


def test_an_unknown_placeholder_fails_the_build():
    with pytest.raises(ValueError, match="unknown placeholder <!-- tvmperf:nothing -->"):
        _render(_hook(), "# x\n\n<!-- tvmperf:nothing -->\n")


def test_the_pages_read_right_on_github():
    """The generated sections are written into the Markdown files (issue 37): GitHub shows a
    page's file as it is, so no bare placeholder and no include line is left for it to show,
    and every section is what the code generates now (else: the command that rewrites them)."""
    hook = _hook()
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"^\s*--8<--", text, re.MULTILINE), f"{page.name}: an include line GitHub shows as is"
        for match in re.finditer(r"^<!-- tvmperf:[a-z]+.*-->$", text, re.MULTILINE):
            if match.group() != hook.END:
                assert text[match.end() :].lstrip("\n") and not text[match.end() :].lstrip("\n").startswith(hook.END), (
                    f"{page.name}: {match.group()} has no generated text"
                )
    stale = hook.stale_pages()
    assert not stale, (
        f"{', '.join(p.name for p in stale)}: generated sections out of date; refresh them with: {hook.COMMAND}"
    )
    workloads = (DOCS / "workloads.md").read_text(encoding="utf-8")
    for example in EXAMPLES:  # each example is in its page whole, as the file the tests run
        assert example.read_text(encoding="utf-8").rstrip("\n") in workloads, example.name


def test_a_stale_section_is_found_and_rewritten(tmp_path: Path):
    """A page whose generated text no longer matches the code is named with the command;
    rewriting it is idempotent, and an opening line with no end yet gets its section."""
    hook = _hook()
    (tmp_path / "a.md").write_text("# a\n\n<!-- tvmperf:env -->\n\n| old |\n\n<!-- tvmperf:end -->\n\ntext\n")
    (tmp_path / "b.md").write_text("# b\n\n<!-- tvmperf:include docs/examples/github-workflow.yml -->\n\nafter\n")
    assert [p.name for p in hook.stale_pages(tmp_path)] == ["a.md", "b.md"]
    a = hook.render((tmp_path / "a.md").read_text())
    assert "| old |" not in a and "| `TVMPERF_BASELINES_REF` |" in a and a.endswith("<!-- tvmperf:end -->\n\ntext\n")
    assert hook.render(a) == a
    b = hook.render((tmp_path / "b.md").read_text())
    assert "```yaml\n" in b and b.endswith("<!-- tvmperf:end -->\n\nafter\n") and hook.render(b) == b
    result = subprocess.run(
        [sys.executable, str(DOCS / "hooks" / "reference.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr

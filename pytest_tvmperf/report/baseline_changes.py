"""``--tvmperf-baselines-ref``: the pull request's changed baseline entries as a report section,
each with its changes and state (its outcome note); made in the controller, so it holds under xdist."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from pytest_tvmperf.result.baseline_change import ChangedEntry, change_lines, entries_differ, markdown, state_of_note
from pytest_tvmperf.result.entry import ResultEntry
from pytest_tvmperf.result.run_report import ReportSection
from pytest_tvmperf.result.markdown import md_code
from pytest_tvmperf.store.files import BaselineError, baseline_path, load_baselines
from pytest_tvmperf.values.node_ids import display_path


def section_maker(
    ref_dir: Path, worktree_dir: Path, rootpath: Path, ref_name: str, approved: bool
) -> Callable[[Sequence[ResultEntry]], ReportSection | None]:
    """The maker :class:`~pytest_tvmperf.result.run_report.RunReport` asks at the end: the changed
    entries of the tests in ``entries``, in their order."""

    def make(entries: Sequence[ResultEntry]) -> ReportSection | None:
        loaded: dict[Path, dict] = {}

        def records(path: Path) -> dict:
            if path not in loaded:
                try:
                    loaded[path] = load_baselines(path)
                except BaselineError:  # the test itself failed naming the problem
                    loaded[path] = {}
            return loaded[path]

        changed: list[ChangedEntry] = []
        seen: set[tuple[Path, str]] = set()
        for e in entries:
            module = rootpath / e.nodeid.split("::")[0]
            ref_file, pr_file = baseline_path(ref_dir, rootpath, module), baseline_path(worktree_dir, rootpath, module)
            key = (pr_file, e.test_id)
            if key in seen or not e.test_id:
                continue
            seen.add(key)
            ref, pr = records(ref_file).get(e.test_id), records(pr_file).get(e.test_id)
            if entries_differ(ref, pr):
                where = display_path(pr_file, rootpath)
                changed.append(
                    ChangedEntry(e.test_id, where, state_of_note(e.note or ""), tuple(change_lines(ref, pr)))
                )
        text = markdown(changed, ref_name, approved) or (
            f"### pytest-tvmperf: this change re-recorded no baseline against {md_code(ref_name)}\n"
        )
        changes = [
            {"test_id": c.test_id, "file": c.file, "state": str(c.state) if c.state else None, "changes": list(c.lines)}
            for c in changed
        ]
        return ReportSection(json={"baseline_changes": changes}, markdown=text, summary_markdown=bool(changed))

    return make

"""Every command a tutorial or how-to guide shows is marked: run by a test, or shown only
(tests/docs_pages.py); and the comparison of a page's output with what a command printed
holds to what it promises."""

from __future__ import annotations

import re

import pytest

from tests.docs_pages import KINDS, PAGES, ROOT, blocks, mismatch


def test_every_console_block_of_the_guides_is_marked() -> None:
    assert len(PAGES) >= 10
    unmarked = [
        b.where
        for page in PAGES
        for b in blocks(page)
        if (b.language == "console" or b.text.startswith("$ ")) and b.kind not in KINDS
    ]
    assert not unmarked, f"console blocks without a docs-test marker: {unmarked}"


def test_every_marker_names_a_kind_and_every_file_block_a_path() -> None:
    for page in PAGES:
        for b in blocks(page):
            assert b.kind in ("", "file", *KINDS), f"{b.where}: unknown marker {b.kind!r}"
            assert b.kind != "file" or b.path, f"{b.where}: a file block names no path"
            if b.kind in KINDS:
                assert b.language == "console" and b.commands, f"{b.where}: no $ command"


def test_the_tutorials_run_something_in_make_test_and_more_in_make_slow() -> None:
    kinds = [b.kind for page in PAGES for b in blocks(page)]
    assert kinds.count("run") >= 1 and kinds.count("slow") >= 5


PRINTED = """\
[   0.0s] local stack up: AWS (moto) at http://127.0.0.1:44045
run local-309d50bad0-936fceb2  model local  base 1x1  0.0163 GPU-hours
status                           ok         ok
verdict: success
"""


@pytest.mark.parametrize(
    ("shown", "why"),
    [
        (["[ 1.5s] local stack up: AWS (moto) at http://127.0.0.1:5", "..."], None),
        (["...", "run local-aaaa1-bbbb2 model local base 1x1 3.5 GPU-hours", "..."], None),
        (["...", "status ok ok", "verdict: success"], None),
        (["...", "verdict: success"], None),
        (["...", "status failed ok", "..."], "no lines"),
        (["...", "verdict: failure"], "no lines"),
        (["...", "status ok ok"], "no lines"),  # not the last line printed
        (["[ 0.0s] local stack up: AWS (moto) at http://127.0.0.1:1"], "more lines"),
        (["run local-a1-b2 model local base 1x1 0.1 GPU-hours", "..."], "no lines"),
    ],
)
def test_output_is_compared_with_numbers_masked_and_dots_for_any_lines(
    shown: list[str], why: str | None
) -> None:
    got = mismatch(shown, PRINTED)
    assert (got is None) if why is None else (got is not None and got.startswith(why)), got


def test_a_quick_blocks_output_is_compared_exactly() -> None:
    assert mismatch(["...", "verdict: success"], PRINTED, exact=True) is None
    assert mismatch(["...", "status ok ok", "..."], PRINTED, exact=True) is None
    shown = ["...", "run local-309d50bad0-936fceb2 model local base 1x1 0.0164 GPU-hours", "..."]
    assert mismatch(shown, PRINTED, exact=True) is not None
    assert mismatch(shown, PRINTED) is None


def test_the_readme_is_a_short_front_door_whose_links_all_lead_somewhere() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 150
    assert "make test" in readme and "make demo" in readme and "make docs" in readme
    targets = re.findall(r"\]\(([^)#]+)\)", readme)
    assert len(targets) >= 15
    assert [t for t in targets if not (ROOT / t).exists()] == []


def test_dots_within_a_line_stand_for_any_text() -> None:
    assert mismatch(["...", "verdict: ..."], PRINTED) is None
    assert mismatch(["...", "run ... model local ...", "..."], PRINTED, exact=True) is None
    assert mismatch(["...", "run ... model remote ...", "..."], PRINTED, exact=True) is not None

"""Strings a run's own code wrote, made harmless where people read them.

A pull request's code writes its logs and manifests, so every string taken from them (an
MLLOG status, a manifest's problem, a GPU model, a file name) is the author's to choose.
Before such a string enters a check run, a commit status or an alert it goes through
``neutral``: control characters and line breaks become spaces (no heading, list or second
line of its own), an `@` or `#` before a name or number gets a zero-width space after it
(no mention, no team ping, no issue reference), and `://` and `www.` get one too (no link
GitHub or a mail reader would make of it). In markdown (``markdown=True``) every character
that Markdown or HTML would act on is backslash-escaped as well, so no emphasis, link,
image, table cell, math or raw HTML comes from it either.
"""

from __future__ import annotations

import re
import unicodedata

ZERO_WIDTH = "\u200b"
# what CommonMark, GitHub's tables, strikethrough and math act on inline; a backslash before
# any ASCII punctuation is a literal character, so escaping these leaves the text as written
MARKDOWN = re.compile(r"([\\`*_\[\]<>|~&!#$])")
PING = re.compile(r"([@#＠＃])(?=\w)")
LINK = re.compile(r"(:)(?=//)|(?<![\w.])(www)(?=\.)", re.IGNORECASE)


def _controls_to_spaces(text: str) -> str:
    """Control, format (bidi overrides, zero-width joiners) and separator characters of
    every kind but the plain space become spaces."""
    return "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c for c in text)


def neutral(text: str, *, markdown: bool = False) -> str:
    """``text`` as a string nobody's markup: see the module's docstring."""
    text = _controls_to_spaces(text)
    if markdown:
        text = MARKDOWN.sub(r"\\\1", text)
    text = PING.sub(rf"\1{ZERO_WIDTH}", text)
    return LINK.sub(lambda m: (m.group(1) or m.group(2)) + ZERO_WIDTH, text)

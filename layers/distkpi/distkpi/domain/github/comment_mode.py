"""A suite's `comment:` (when its pull-request comment is written), apart from the comment
itself (pr_comment.py), so that reading a suite imports no judging."""

from __future__ import annotations

from enum import StrEnum


class CommentMode(StrEnum):
    ALWAYS = "always"  # after every finished run of the pull request
    ON_CHANGE = "on_change"  # when the verdict or a row's judgement differs from the shown
    NEVER = "never"

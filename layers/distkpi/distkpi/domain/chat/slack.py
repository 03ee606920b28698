"""A notice as a Slack message (Block Kit, for an incoming webhook): a header, the verdict's
words, the mentions, the table as preformatted text, the links as buttons. Slack acts on
`&`, `<` and `>` in text (`<!channel>`, `<url|label>`), so every text is escaped; the
notice's strings are already neutral (notices.py). Slack's own limits are kept: a header of
150 characters, a section of 3,000."""

from __future__ import annotations

from typing import Any

from distkpi.domain.chat.notices import Notice

HEADER_LIMIT = 150
SECTION_LIMIT = 3000
CUT = "…"


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(CUT)] + CUT


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, SECTION_LIMIT)}}


def table(headings: tuple[str, ...], rows: tuple[tuple[str, ...], ...]) -> str:
    """The rows in aligned columns, inside a code block (Slack has no tables)."""
    lines = [headings, *rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(headings))]
    text = "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )
    fence = "```"
    room = SECTION_LIMIT - 2 * len(fence) - 2
    return f"{fence}\n{escape(_clip(text, room))}\n{fence}"


def slack_message(notice: Notice, *, held_back: int = 0) -> dict[str, Any]:
    """The message; ``held_back``: how many of the suite's alerts the rate limit kept from
    the chat in the hour before (said once, on the next message that goes out)."""
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": _clip(notice.title, HEADER_LIMIT)},
        },
        _section(escape(notice.summary)),
    ]
    if notice.culprit:
        blocks.append(_section(f"*Culprit:* {escape(notice.culprit)}"))
    if notice.mentions:
        blocks.append(_section(f"*For:* {escape(' '.join(notice.mentions))}"))
    if notice.rows:
        blocks.append(_section(table(notice.headings, notice.rows)))
    if notice.links:
        buttons = [
            {"type": "button", "text": {"type": "plain_text", "text": link.label}, "url": link.url}
            for link in notice.links
        ]
        blocks.append({"type": "actions", "elements": buttons})
    if held_back:
        note = (
            f"{held_back} more alert(s) of {escape(notice.suite)} in the hour before were not "
            "posted here (rate limit); the SNS topic has every one."
        )
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": note}]})
    return {"text": _clip(notice.title, SECTION_LIMIT), "blocks": blocks}


def limit_message(suite: str, limit: int) -> dict[str, Any]:
    """The one message that says the suite reached its limit this hour."""
    text = (
        f"distkpi: {escape(suite)} sent {limit} alerts this hour; its further alerts this hour "
        "go to the SNS topic only, and the next message here counts them."
    )
    return {"text": text, "blocks": [_section(text)]}

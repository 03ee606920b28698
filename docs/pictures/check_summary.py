"""The README's picture of a check run: the golden summary (tests/golden/check_summary.md)
rendered to HTML as GitHub renders markdown (GFM tables, its fonts and table style), then
photographed by a real headless browser.

    .venv/bin/python docs/pictures/check_summary.py   # needs Debian's chromium
"""

from __future__ import annotations

import html
import tempfile
from pathlib import Path

import markdown
from chromium import screenshot

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = ROOT / "tests" / "golden" / "check_summary.md"
PICTURE = ROOT / "docs" / "pictures" / "check-summary.png"
TITLE = "32 GPUs 19.3x (-23%), eff 0.60, TTA 46s, acc Δ0.0002: 4x8-8ps tput -23%; …"

# the parts of GitHub's markdown stylesheet a check's summary uses
STYLE = """
body { margin: 0; background: #f6f8fa; font: 14px/1.5 -apple-system, BlinkMacSystemFont,
  "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; color: #1f2328; }
.check { margin: 16px; background: #fff; border: 1px solid #d0d7de; border-radius: 6px; }
.head { padding: 12px 16px; border-bottom: 1px solid #d0d7de; }
.head .name { font-weight: 600; font-size: 16px; }
.head .failure { color: #d1242f; font-weight: 600; }
.markdown-body { padding: 16px; }
.markdown-body table { border-collapse: collapse; display: block; width: max-content;
  max-width: 100%; overflow: auto; margin-bottom: 16px; }
.markdown-body th, .markdown-body td { padding: 6px 13px; border: 1px solid #d0d7de; }
.markdown-body th { font-weight: 600; }
.markdown-body tr { background: #fff; border-top: 1px solid #d1d9e0b3; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; }
.markdown-body a { color: #0969da; text-decoration: none; }
"""


def page(summary: str) -> str:
    body = markdown.markdown(summary, extensions=["tables"])
    return f"""<!doctype html><html><head><meta charset="utf-8"><style>{STYLE}</style></head>
<body><div class="check"><div class="head"><span class="name">distkpi/resnet50</span>
&nbsp;<span class="failure">✖ failure</span><br>{html.escape(TITLE)}</div>
<div class="markdown-body">{body}</div></div></body></html>"""


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "check.html"
        source.write_text(page(SUMMARY.read_text()))
        screenshot(source, PICTURE, 1500, 1120)
    print(f"wrote {PICTURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

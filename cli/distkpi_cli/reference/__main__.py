"""`python -m distkpi_cli.reference [--check]`: write the reference pages under
docs/reference/ and the suite's JSON Schema from the code (make docs runs it); with
--check, write nothing and exit 1 naming every file that is not what the code makes."""

from __future__ import annotations

import argparse
import sys

from distkpi_cli.reference.generate import ROOT, generated


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m distkpi_cli.reference", description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args()
    stale = []
    for relative, text in generated().items():
        path = ROOT / relative
        if path.exists() and path.read_text() == text:
            continue
        stale.append(relative)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if args.check and stale:
        print(
            "stale, run `python -m distkpi_cli.reference`: " + ", ".join(map(str, stale)),
            file=sys.stderr,
        )
        return 1
    for relative in stale:
        print(f"wrote {relative}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

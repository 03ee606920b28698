"""A node's summaries are used only by a collector of the same engine version, so the version
must change whenever what parsing gives can change: the parser's sources are hashed, and each
version's hash is recorded here. Changing a source without bumping ENGINE_VERSION (in
domain/logs/filesummary.py) fails; bump it, then record the new hash under the new version."""

from __future__ import annotations

import hashlib
from pathlib import Path

from distkpi.domain.logs.filesummary import ENGINE_VERSION

LOGS = Path(__file__).resolve().parents[2] / "layers" / "distkpi" / "distkpi" / "domain" / "logs"
# everything a summary depends on: the scanner, the readers, the reductions, their bounds,
# and how a summary is written and read (every module under domain/logs/, readers included)
PARSER_SOURCES = (
    "../accuracy.py",
    "../patterns.py",
    *sorted(str(p.relative_to(LOGS)) for p in LOGS.rglob("*.py")),
)
# every engine version there has been, with the hash of its sources; never edit a line
RECORDED = {
    1: "fa656cdae2a759292a3b39fa7f16739b2cd106e16feebaeb363c208923cb0a58",
    # the field's formats, directions and suites' patterns (issue 23), in domain/logs/
    2: "058b2a1f3a419c04facaf6c845cb1bf13bcbb5c45a95a4a8da3f45a680d2bfe3",
    # what language-model logs state: tokens/s, step time, TFLOP/s, MFU, loss, memory (issue 33)
    3: "14d4757156ea3bc83144fa4e2af8aefe956626c33282703c65fbef0d94473090",
    # readers as a registry, one module per log family, and today's frameworks (issue 33)
    4: "21d2f7581e5d4d167d6f6574b8a443426ce7953db1d44606d7170950384efa1d",
    # a crash's cause: the exception line its traceback ends with (issue 34)
    5: "e7a1a1693b18035afd56e6fa1e2d5efddaaad46fe188d0b32e0411ed63d60200",
    # MLLOG train_loss and run_stop, perplexity fixing the direction, Megatron's interval
    # rate over DeepSpeed's timer, MaxText's rates as work over time (issue 33)
    6: "59680deca54f0ef4d989f672b79ca8b26a82052690879df2f5212578344b925a",
}


def sources_hash() -> str:
    digest = hashlib.sha256()
    for name in PARSER_SOURCES:
        digest.update(name.encode() + b"\0" + (LOGS / name).read_bytes() + b"\0")
    return digest.hexdigest()


def test_the_parsers_sources_are_those_of_this_engine_version() -> None:
    assert max(RECORDED) == ENGINE_VERSION, "record the new version's hash here"
    assert sources_hash() == RECORDED[ENGINE_VERSION], (
        f"the parser's sources changed: bump ENGINE_VERSION in domain/logs/filesummary.py to "
        f"{ENGINE_VERSION + 1} and record {ENGINE_VERSION + 1}: {sources_hash()!r} here"
    )


def test_no_two_versions_share_sources() -> None:
    assert len(set(RECORDED.values())) == len(RECORDED)

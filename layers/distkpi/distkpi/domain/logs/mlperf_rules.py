"""MLPerf Training's quality metric per benchmark, and which way it improves.

A log names its benchmark (`submission_benchmark`); MLPerf's rules fix what its
`eval_accuracy` measures (training_rules.adoc, "Benchmarks": the quality target of each),
so such a log is read in the right direction whatever its run states. Stable Diffusion
logs two metrics, each on its own `eval_accuracy` line (`metadata.metric`), read as the
named parts of one evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from distkpi.domain.accuracy import Direction

HIGHER, LOWER = Direction.HIGHER, Direction.LOWER


@dataclass(frozen=True)
class QualityRule:
    metric: str
    direction: Direction
    # the named parts of a two-metric benchmark, each with its own direction
    parts: Mapping[str, Direction] = field(default_factory=dict)


RULES: Mapping[str, QualityRule] = {
    "resnet": QualityRule("top-1 accuracy", HIGHER),
    "bert": QualityRule("masked-LM accuracy", HIGHER),
    "maskrcnn": QualityRule("box and mask mAP", HIGHER),
    "ssd": QualityRule("mAP", HIGHER),
    "retinanet": QualityRule("mAP", HIGHER),
    "unet3d": QualityRule("mean DICE score", HIGHER),
    "dlrm": QualityRule("AUC", HIGHER),
    "dlrm_dcnv2": QualityRule("AUC", HIGHER),
    "minigo": QualityRule("win rate", HIGHER),
    "gnn": QualityRule("accuracy", HIGHER),
    "transformer": QualityRule("BLEU", HIGHER),
    "gnmt": QualityRule("BLEU", HIGHER),
    "ncf": QualityRule("HR@10", HIGHER),
    "rnnt": QualityRule("word error rate", LOWER),
    "gpt3": QualityRule("log perplexity", LOWER),
    "llama2_70b_lora": QualityRule("evaluation loss (log perplexity)", LOWER),
    "llama31_405b": QualityRule("log perplexity", LOWER),
    "llama31_8b": QualityRule("log perplexity", LOWER),
    "stable_diffusion": QualityRule(
        "FID (lower) and CLIP score (higher)", LOWER, {"FID": LOWER, "CLIP": HIGHER}
    ),
}


def rule_for(benchmark: str | None) -> QualityRule | None:
    if benchmark is None:
        return None
    return RULES.get(benchmark.strip().lower())


def direction_problem(benchmark: str | None, stated: Direction) -> str | None:
    """Why a stated accuracy direction contradicts the benchmark's rules; None when it does
    not (or the benchmark is not one MLPerf's rules name)."""
    rule = rule_for(benchmark)
    if rule is None or rule.parts or rule.direction is stated:
        return None
    return (
        f"accuracy_direction {stated} contradicts MLPerf's {benchmark}, whose quality "
        f"metric, the {rule.metric}, is {rule.direction} is better"
    )

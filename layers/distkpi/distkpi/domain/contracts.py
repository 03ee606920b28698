"""The run-folder contract (docs/architecture.md): run.json and <config>/node-<i>.json."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from distkpi.domain.accuracy import Direction, Target
from distkpi.domain.patterns import DeclaredMetrics
from distkpi.exceptions import ContractError

SCHEMA_VERSION = 1
CONFIG_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
# A manifest names its node's logs and GPU samples: a few per GPU. The bound keeps a hostile
# manifest from making the collector read one file thousands of times.
MAX_FILES_PER_MANIFEST = 256
MAX_PATH_BYTES = 1024  # S3's key limit
# What the collector parses, so a config settles well inside a function's time whatever its
# nodes wrote (a log of nothing but MLLOG lines parses at ~5 MB/s a core, realistic ones at
# 700 MB/s and more: bench/README.md): a node cuts a log or GPU file at MAX_LOG_BYTES
# (saying so in its manifest), a bigger file is a problem unparsed, and a config's files
# past MAX_CONFIG_LOG_BYTES in all are not parsed either.
MAX_LOG_BYTES = 64 * 2**20
MAX_CONFIG_LOG_BYTES = 256 * 2**20
MAX_NAME_BYTES = 255  # a file name on Linux


def require_unique_names(names: Iterable[str]) -> None:
    """For pydantic validators: a ValueError naming every config name that repeats."""
    seen = list(names)
    repeated = sorted({n for n in seen if seen.count(n) > 1})
    if repeated:
        raise ValueError(f"config names repeat: {', '.join(repeated)}")


PART_NAME = r"^[A-Za-z0-9_.-]{1,40}$"
MAX_PARTS = 16
TargetAccuracy = (
    Annotated[float, Field(allow_inf_nan=False)]
    | Annotated[
        dict[
            Annotated[str, Field(pattern=PART_NAME)], Annotated[float, Field(allow_inf_nan=False)]
        ],
        Field(min_length=1, max_length=MAX_PARTS),
    ]
)


def check_target(target: Target, info: ValidationInfo) -> Target:
    """For a target_accuracy validator (after the model's accuracy_direction): every part of
    the target must be one a metric of that direction can reach, within [0, 1] for
    higher-is-better, any positive number for lower-is-better. A run that states no
    direction may name any target at least 0: its logs can fix the direction (an MLPerf log's
    submission_benchmark), and the engine says so where none does."""
    direction = info.data.get("accuracy_direction", Direction.HIGHER)
    parts = list(target.values()) if isinstance(target, Mapping) else [target]
    if not info.data.get("direction_stated", True):
        if any(part < 0 for part in parts):
            raise PydanticCustomError("greater_than_equal", "Input should be at least 0")
        return target
    for part in parts:
        if direction is Direction.HIGHER and not 0 <= part <= 1:
            raise PydanticCustomError(
                "less_than_equal",
                "Input should be less than or equal to 1 and at least 0 for a higher-is-better "
                "metric (accuracy_direction: lower for an error rate or a perplexity)",
            )
        if direction is Direction.LOWER and not part > 0:
            raise PydanticCustomError(
                "greater_than", "Input should be greater than 0 for a lower-is-better metric"
            )
    return target


class _Frozen(BaseModel):
    # each model's validator is built when first used, not at import (start-up, issue 34)
    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)


# a config's parallel layout, as today's frameworks split a job: tensor, pipeline, data,
# expert and context parallel sizes, the ZeRO stage, the micro and global batch (samples),
# the sequence length (tokens)
LAYOUT_FIELDS = (
    "tp",
    "pp",
    "dp",
    "ep",
    "cp",
    "zero_stage",
    "micro_batch",
    "global_batch",
    "seq_len",
)
Size = Annotated[int, Field(ge=1)] | None


def layout_problem(name: str, gpus: int, layout: Mapping[str, int | None]) -> str | None:
    """Why tp x pp x dp x cp cannot be the config's GPUs; None when it can (a dp left out is
    what the others leave: it must then be a whole number)."""
    sizes = {k: layout[k] for k in ("tp", "pp", "dp", "cp") if layout.get(k) is not None}
    if not sizes:
        return None
    product = 1
    for size in sizes.values():
        product *= size or 1
    said = " x ".join(f"{k} {v}" for k, v in sizes.items())
    if "dp" in sizes and product != gpus:
        return f"config {name}: {said} = {product}, not its {gpus} GPUs"
    if "dp" not in sizes and gpus % product:
        return f"config {name}: {said} = {product} does not divide its {gpus} GPUs"
    return None


class ConfigSpec(_Frozen):
    name: Annotated[str, Field(pattern=CONFIG_NAME_PATTERN)]
    trainers: Annotated[int, Field(ge=1)]
    gpus_per_trainer: Annotated[int, Field(ge=1)]
    pservers: Annotated[int, Field(ge=0)]
    batch_size: Annotated[int, Field(ge=1)]
    nodes: Annotated[int, Field(ge=1)]
    # its parallel layout (LAYOUT_FIELDS), where the suite states it
    tp: Size = None
    pp: Size = None
    dp: Size = None
    ep: Size = None
    cp: Size = None
    zero_stage: Annotated[int, Field(ge=0, le=3)] | None = None
    micro_batch: Size = None
    global_batch: Size = None
    seq_len: Size = None

    @property
    def gpus(self) -> int:
        return self.trainers * self.gpus_per_trainer

    @property
    def layout(self) -> dict[str, int]:
        """The layout it states; dp, when left out, what tp x pp x cp leave of its GPUs."""
        stated = {k: v for k in LAYOUT_FIELDS if (v := getattr(self, k)) is not None}
        if stated.keys() & {"tp", "pp", "cp"} and "dp" not in stated:
            split = stated.get("tp", 1) * stated.get("pp", 1) * stated.get("cp", 1)
            stated = {**stated, "dp": self.gpus // split}
        return {k: stated[k] for k in LAYOUT_FIELDS if k in stated}

    @model_validator(mode="after")
    def _layout_fits(self) -> ConfigSpec:
        problem = layout_problem(self.name, self.gpus, self.model_dump())
        if problem:
            raise ValueError(problem)
        return self

    @model_serializer(mode="wrap")
    def _layout_only_when_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        """run.json names a config's layout only where the suite states it."""
        dumped = handler(self)
        if isinstance(dumped, dict):
            for key in LAYOUT_FIELDS:
                if dumped.get(key) is None:
                    dumped.pop(key, None)
        return dumped


SHA = r"^[0-9a-f]{40}$"


class PairedRun(_Frozen):
    """A paired run's other commit and its shape (suite `verdict: paired:`): every job runs
    ``base_sha`` (arm A) and the run's ``sha`` (arm B) alternately on the same nodes."""

    base_sha: Annotated[str, Field(pattern=SHA)]
    max_pairs: Annotated[int, Field(ge=1, le=8)]
    warmup: bool
    # an A/A job of `distkpi calibrate`: both arms are the run's own commit, every pair runs,
    # and its status has a context of its own (`distkpi/<model>/calibration`)
    calibration: bool = False

    @model_serializer(mode="wrap")
    def _calibration_only_when_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        """run.json says `calibration` only for an A/A run: every other paired run's reads
        as it did before there were any."""
        dumped = handler(self)
        if isinstance(dumped, dict) and not self.calibration:
            dumped.pop("calibration", None)
        return dumped


class DiagnosisRun(_Frozen):
    """A diagnosis job's run (suite `diagnose:`): its one pair runs the base and the head,
    each profiled for ``steps`` steps; it diagnoses ``of_run``'s configs, is never judged and
    is in no history."""

    of_run: Annotated[str, Field(min_length=1)]
    steps: Annotated[int, Field(ge=1, le=50)]
    # a bisection's culprit against its parent (else the run's head against its base)
    culprit: bool = False

    @model_serializer(mode="wrap")
    def _culprit_only_when_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        dumped = handler(self)
        if isinstance(dumped, dict) and not self.culprit:
            dumped.pop("culprit", None)
        return dumped


Dtype = Literal["fp32", "tf32", "fp16", "bf16", "fp8"]
Quality = Literal["loss", "eval"]


class ModelFlops(_Frozen):
    """A transformer's shape, for FLOPs per token by the standard rule when the suite gives
    no ``flops_per_token``: 6 N (forward and backward of every weight) plus attention's
    12 L H Q T (L layers, H heads of Q dimensions: ``hidden`` = H Q, T the sequence length)."""

    params: Annotated[float, Field(gt=0)]
    layers: Annotated[int, Field(ge=1)]
    hidden: Annotated[int, Field(ge=1)]

    def per_token(self, seq_len: int) -> float:
        return 6 * self.params + 12 * self.layers * self.hidden * seq_len


class Alignment(_Frozen):
    """How close every config's per-step loss must stay to the base config's."""

    max_rel_diff: Annotated[float, Field(gt=0)] = 0.02
    from_step: Annotated[int, Field(ge=0)] = 0


def check_quality(quality: str, info: ValidationInfo) -> str:
    """For a quality validator (after accuracy_direction): a loss improves as it falls."""
    if quality == "loss" and info.data.get("accuracy_direction") is not Direction.LOWER:
        raise ValueError("quality: loss needs accuracy_direction: lower (a loss falls)")
    return quality


# the run's training settings: what language-model KPIs need beyond the logs
TRAINING_FIELDS = (
    "dtype",
    "seq_len",
    "flops_per_token",
    "model_flops",
    "quality",
    "alignment",
    "golden",
)


class RunSpec(_Frozen):
    schema_: Annotated[Literal[1], Field(alias="schema")]
    run_id: Annotated[str, Field(min_length=1)]
    repo: Annotated[str, Field(pattern=r"^[^/]+/[^/]+$")]
    sha: Annotated[str, Field(pattern=SHA)]
    ref: str
    model: Annotated[str, Field(min_length=1)]
    # before the target: it says which targets can be reached; HIGHER when run.json states
    # none, and then a log that names its benchmark fixes it (direction_stated: whether
    # run.json states one, set from the document itself, never read from it)
    accuracy_direction: Direction = Direction.HIGHER
    direction_stated: Annotated[bool, Field(exclude=True)] = True
    target_accuracy: TargetAccuracy
    # None: the last test accuracy reported counts
    accuracy_pass: Annotated[int, Field(ge=0)] | None = None
    accuracy_tolerance: Annotated[float, Field(ge=0)]
    configs: Annotated[tuple[ConfigSpec, ...], Field(min_length=1)]
    # throughput reports dropped as warm-up; None: the first 5%, at least one
    warmup_reports: Annotated[int, Field(ge=0)] | None = None
    # how the suite's logs state KPIs the built-in readers do not know (declared.py)
    metrics: DeclaredMetrics | None = None
    # set for a paired run: its base commit, the pairs at most, the warm-up
    paired: PairedRun | None = None
    # set for a diagnosis job's run (paired, one pair): the run it diagnoses, the steps
    diagnosis: DiagnosisRun | None = None
    # language-model training (TRAINING_FIELDS): the precision the MFU's peak is taken at,
    # tokens per sample, FLOPs per token (given, or by the 6N + attention rule), whether
    # convergence is the training loss or an evaluation, the loss-curve alignment across
    # configs and the golden curve's file in the repository under test
    dtype: Dtype | None = None
    seq_len: Annotated[int, Field(ge=1)] | None = None
    flops_per_token: Annotated[float, Field(gt=0)] | None = None
    model_flops: ModelFlops | None = None
    quality: Quality = "eval"
    alignment: Alignment | None = None
    golden: Annotated[str, Field(min_length=1)] | None = None

    _loss_falls = field_validator("quality")(check_quality)

    @model_validator(mode="before")
    @classmethod
    def _whether_direction_stated(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            return {**data, "direction_stated": "accuracy_direction" in data}
        return data

    @model_serializer(mode="wrap")
    def _training_only_when_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        """run.json names the training settings only when the suite sets them: every other
        run's reads as it did before there were any."""
        dumped = handler(self)
        if isinstance(dumped, dict):
            if not self.direction_stated:
                dumped.pop("accuracy_direction", None)
            if self.accuracy_pass is None:
                dumped.pop("accuracy_pass", None)
            if self.diagnosis is None:
                dumped.pop("diagnosis", None)
            for key in TRAINING_FIELDS:
                if dumped.get(key) is None or (key == "quality" and dumped[key] == "eval"):
                    dumped.pop(key, None)
        return dumped

    @field_validator("configs")
    @classmethod
    def _unique_names(cls, configs: tuple[ConfigSpec, ...]) -> tuple[ConfigSpec, ...]:
        require_unique_names(c.name for c in configs)
        return configs

    _reachable_target = field_validator("target_accuracy")(check_target)

    @field_validator("paired")
    @classmethod
    def _calibration_is_a_a(
        cls, paired: PairedRun | None, info: ValidationInfo
    ) -> PairedRun | None:
        if paired is not None and paired.calibration and paired.base_sha != info.data.get("sha"):
            raise ValueError("a calibration run measures its own sha in both arms (base_sha)")
        return paired

    @property
    def calibration(self) -> bool:
        """An A/A run of `distkpi calibrate` (PairedRun.calibration)."""
        return self.paired is not None and self.paired.calibration

    def config(self, name: str) -> ConfigSpec:
        for spec in self.configs:
            if spec.name == name:
                return spec
        raise ContractError(f"run {self.run_id} has no config {name!r}")

    @property
    def base_config(self) -> ConfigSpec:
        """The speedup base: the config with the fewest GPUs, the first listed on a tie."""
        return min(self.configs, key=lambda c: c.gpus)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


Role = Literal["trainer", "pserver"]
# log and gpu_memory files are parsed; a file is what a command left, kept for people
FileKind = Literal["log", "gpu_memory", "file"]


SHA256_HEX = r"^[0-9a-f]{64}$"


class FileEntry(_Frozen):
    path: str
    role: Role
    rank: Annotated[int, Field(ge=0)]
    kind: FileKind
    # the file's sha256 as its node uploaded it (domain/signing.py)
    sha256: Annotated[str, Field(pattern=SHA256_HEX)] | None = None
    # the KPI engine's result for it, made by its node (domain/logs/filesummary.py)
    summary: dict[str, Any] | None = None
    # how many bytes its node cut off the end (the file was over MAX_LOG_BYTES)
    truncated_bytes: Annotated[int, Field(ge=1)] | None = None

    @field_validator("path")
    @classmethod
    def _stays_in_config_folder(cls, path: str) -> str:
        if not path or path.startswith("/") or "\\" in path:
            raise ValueError("must be a relative path inside the config folder")
        parts = path.split("/")
        if ".." in parts:
            raise ValueError("must not leave the config folder")
        if any(ord(c) < 32 for c in path):
            raise ValueError("must not hold control characters")
        if len(path.encode()) > MAX_PATH_BYTES:
            raise ValueError(f"must be at most {MAX_PATH_BYTES} bytes")
        if any(len(part.encode()) > MAX_NAME_BYTES for part in parts):
            raise ValueError(f"each name in it must be at most {MAX_NAME_BYTES} bytes")
        return path


class NodeHardware(_Frozen):
    """What a node ran on (node/hardware.py); `unknown` where it could not tell."""

    instance_type: Annotated[str, Field(min_length=1, max_length=100)]
    gpu_model: Annotated[str, Field(min_length=1, max_length=200)]
    gpu_count: Annotated[int, Field(ge=0, le=1024)]
    problem: Annotated[str, Field(max_length=1000)] | None = None

    @property
    def name(self) -> str:
        return f"{self.instance_type}/{self.gpu_model}"


class ArmRun(_Frozen):
    """One arm's run of a pair, as its node saw it."""

    exit_code: int
    wall_s: float


class NodeManifest(_Frozen):
    schema_: Annotated[Literal[1], Field(alias="schema")]
    # where it belongs, inside what is signed (absent from manifests of unsigned nodes)
    run_id: str | None = None
    config: str | None = None
    node: Annotated[int, Field(ge=0)]
    exit_code: int
    started_at: datetime
    finished_at: datetime
    files: Annotated[tuple[FileEntry, ...], Field(max_length=MAX_FILES_PER_MANIFEST)]
    peak_host_rss_mib: float | None = None
    wall_s: float | None = None
    setup_s: float | None = None
    # why the node could not run its command (checkout, setup, rendezvous), if it could not
    problem: Annotated[str, Field(max_length=1000)] | None = None
    hardware: NodeHardware | None = None
    # the KPI engine that made its files' summaries (domain/logs/engineversion.py)
    engine_version: int | None = None
    # the digest of the parse settings its summaries were made with, where they are not the
    # engine's defaults (domain/logs/parsesettings.py)
    summary_settings: Annotated[str, Field(pattern=SHA256_HEX)] | None = None
    # a paired run's look manifest (pair-<p>/node-<i>.json): the pair it reports, and how
    # each arm's run of it ended
    pair: Annotated[int, Field(ge=1)] | None = None
    arms: dict[Literal["a", "b"], ArmRun] | None = None
    # HMAC-SHA256 of the rest under the config's key (domain/signing.py)
    signature: Annotated[str, Field(pattern=SHA256_HEX)] | None = None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class LookDecision(_Frozen):
    """What the collector decided after a pair of a paired config (pair-<p>/decision.json,
    signed with the config's key): stop, with the outcome so far, or go on to the next
    pair. Every node of the job reads the same one, so they stop or go on together."""

    run_id: str
    config: str
    pair: Annotated[int, Field(ge=1)]
    decision: Literal["stop", "continue"]
    outcome: Literal["pass", "fail"] | None = None
    why: Annotated[str, Field(max_length=1000)] = ""

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def describe_errors(exc: ValidationError) -> str:
    """Each invalid field as `where: why`, for the error a person reads."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def parse_run_spec(data: object) -> RunSpec:
    try:
        return RunSpec.model_validate(data)
    except ValidationError as exc:
        raise ContractError(
            f"run.json does not follow schema {SCHEMA_VERSION}: {describe_errors(exc)}"
        ) from exc


def parse_node_manifest(data: object, where: str) -> NodeManifest:
    try:
        return NodeManifest.model_validate(data)
    except ValidationError as exc:
        raise ContractError(
            f"{where} is not a valid node manifest: {describe_errors(exc)}"
        ) from exc

"""Benchmark suites (infra/suites/<model>.yaml): one model's matrix of configs."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from distkpi.domain.accuracy import Direction
from distkpi.domain.contracts import (
    CONFIG_NAME_PATTERN,
    LAYOUT_FIELDS,
    Alignment,
    ConfigSpec,
    Dtype,
    ModelFlops,
    Quality,
    Size,
    TargetAccuracy,
    check_quality,
    check_target,
    describe_errors,
    layout_problem,
    require_unique_names,
)
from distkpi.domain.github.codeowners import OWNER_PATTERN
from distkpi.domain.github.comment_mode import CommentMode
from distkpi.domain.judging.settings import VerdictSettings
from distkpi.domain.patterns import DeclaredMetrics
from distkpi.domain.planning.sizing import PserverResources, TrainerResources
from distkpi.exceptions import ContractError

# the events a config may be limited to (`when:`): a pull request, a push to a configured
# branch, a pull request carrying a label, a scheduled run
EVENT_KINDS = ("pull_request", "push", "schedule")
LABEL_PREFIX = "label:"


def _when_known(when: tuple[str, ...] | None) -> tuple[str, ...] | None:
    for kind in when or ():
        if kind not in EVENT_KINDS and not (
            kind.startswith(LABEL_PREFIX) and kind.removeprefix(LABEL_PREFIX).strip()
        ):
            raise ValueError(f"{kind!r} is none of {', '.join(EVENT_KINDS)} or label:<name>")
    return when


class SuiteConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Annotated[str, Field(pattern=CONFIG_NAME_PATTERN, max_length=40)]
    trainers: Annotated[int, Field(ge=1)]
    gpus_per_trainer: Annotated[int, Field(ge=1)]
    pservers: Annotated[int, Field(ge=0)] = 0
    batch_size: Annotated[int, Field(ge=1)]
    # its parallel layout (contracts.LAYOUT_FIELDS): tp x pp x dp x cp must be its GPUs
    tp: Size = None
    pp: Size = None
    dp: Size = None
    ep: Size = None
    cp: Size = None
    zero_stage: Annotated[int, Field(ge=0, le=3)] | None = None
    micro_batch: Size = None
    global_batch: Size = None
    seq_len: Size = None
    # on which events it runs (unset: every event); a large multi-node config can run on a
    # push (the merge), on a pull request with a label, or on a schedule
    when: Annotated[tuple[str, ...] | None, Field(min_length=1, exclude=True)] = None

    _when = field_validator("when")(_when_known)

    def runs_on(self, event: str, labels: Iterable[str] = ()) -> bool:
        """Whether a delivery of ``event`` (a pull request's with ``labels``) runs it."""
        if self.when is None:
            return True
        return event in self.when or (
            event == "pull_request"
            and any(f"{LABEL_PREFIX}{label}" in self.when for label in labels)
        )

    @model_validator(mode="after")
    def _layout_fits(self) -> SuiteConfig:
        gpus = self.trainers * self.gpus_per_trainer
        problem = layout_problem(self.name, gpus, self.model_dump())
        if problem:
            raise ValueError(problem)
        return self

    def spec(self) -> ConfigSpec:
        return ConfigSpec(
            name=self.name,
            trainers=self.trainers,
            gpus_per_trainer=self.gpus_per_trainer,
            pservers=self.pservers,
            batch_size=self.batch_size,
            nodes=self.trainers + self.pservers,
            **{k: getattr(self, k) for k in LAYOUT_FIELDS},
        )


class BisectSettings(BaseModel):
    """Bisect a branch's regression to the commit that did it (suite `bisect:`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    # the midpoints a bisection may measure (a step's one retry or re-run not counted);
    # unset: enough for its range, ceil(log2(commits)), at most MAX_BISECT_RUNS
    max_runs: Annotated[int, Field(ge=1, le=16)] | None = None


class AlertSettings(BaseModel):
    """Which of a suite's results alert its owners (suite `alert:`), besides the default
    branch's regressions and their bisections' culprits, which always do."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # a pull request's failure too (its run's verdict `failure`)
    pull_requests: bool = False


Owner = Annotated[str, Field(pattern=OWNER_PATTERN)]


class DiagnoseWhen(StrEnum):
    REGRESSION = "regression"  # a run whose verdict regressed a timing KPI, a culprit
    ALWAYS = "always"  # every run of a commit that measured a change (not an unchanged head)
    NEVER = "never"


class DiagnoseSettings(BaseModel):
    """A profiled pass of base and head after a regression (suite `diagnose:`): when, and
    how many steps each profiles (DISTKPI_PROFILE_STEPS) after the program's warm-up."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    on: DiagnoseWhen = DiagnoseWhen.REGRESSION
    steps: Annotated[int, Field(ge=1, le=50)] = 5

    @model_validator(mode="before")
    @classmethod
    def _yaml_on(cls, data: object) -> object:
        """YAML 1.1 (PyYAML) reads an unquoted `on:` key as the boolean true."""
        if isinstance(data, dict) and True in data and "on" not in data:
            data = {("on" if k is True else k): v for k, v in data.items()}
        return data


DEFAULT_SOURCE = "https://github.com/{repo}.git"
NO_SOURCE = "none"
SetupCommand = (
    Annotated[str, Field(min_length=1)]
    | Annotated[tuple[Annotated[str, Field(min_length=1)], ...], Field(min_length=1)]
)


class Suite(BaseModel):
    """A model's benchmark matrix. Each trainer and each pserver is one node of the job."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=40)]
    # what every node runs, in the checkout of the commit under test (`distkpi node`)
    command: Annotated[tuple[Annotated[str, Field(min_length=1)], ...], Field(min_length=1)]
    # where the code under test comes from: a clone URL with {repo}, or none (in the image)
    source: str = DEFAULT_SOURCE
    # commands run in the checkout before the command: each a list of arguments, or a string
    # run by `sh -c`
    setup: tuple[SetupCommand, ...] = ()
    # the job image; {sha} is replaced by the commit (unset: the stack's JobImage)
    image: str | None = None
    # how long the command may run on a node before it is stopped (a parameter server no
    # trainer ever reaches would otherwise hold its job until the run's deadline)
    command_timeout_s: Annotated[int, Field(ge=1)] = 7200
    # glob patterns (`**` any folders): a change touching none of them skips the suite
    paths: (
        Annotated[tuple[Annotated[str, Field(min_length=1)], ...], Field(min_length=1)] | None
    ) = None
    # the repositories (owner/name) this suite runs for; unset: every one
    repos: tuple[Annotated[str, Field(pattern=r"^[^/\s]+/[^/\s]+$")], ...] | None = None
    # higher: the quality metric improves as it rises (top-1); lower: as it falls (WER)
    accuracy_direction: Direction = Direction.HIGHER
    target_accuracy: TargetAccuracy
    # the pass whose test accuracy counts, as the logs number passes (and DISTKPI_EPOCHS =
    # it + 1); unset: the last test accuracy reported, the job's own number of passes
    accuracy_pass: Annotated[int, Field(ge=0)] | None = None
    accuracy_tolerance: Annotated[float, Field(ge=0)]
    configs: Annotated[tuple[SuiteConfig, ...], Field(min_length=1)]
    # throughput reports dropped as warm-up before averaging; unset: the first 5%, at least 1
    warmup_reports: Annotated[int, Field(ge=0)] | None = None
    # how this suite's logs state KPIs: RE2 patterns, before the built-in readers
    metrics: DeclaredMetrics | None = None
    # language-model training (contracts.TRAINING_FIELDS): the MFU's precision, tokens per
    # sample, FLOPs per token (or the model's shape for 6N + attention), the training loss or
    # an evaluation as the quality, loss-curve alignment, a golden curve's file
    dtype: Dtype | None = None
    seq_len: Annotated[int, Field(ge=1)] | None = None
    flops_per_token: Annotated[float, Field(gt=0)] | None = None
    model_flops: ModelFlops | None = None
    quality: Quality = "eval"
    alignment: Alignment | None = None
    golden: Annotated[str, Field(min_length=1)] | None = None
    verdict: VerdictSettings = Field(default_factory=VerdictSettings)
    bisect: BisectSettings = Field(default_factory=BisectSettings)
    # when its pull-request comment is written (domain/github/pr_comment.py)
    comment: CommentMode = CommentMode.ON_CHANGE
    # who its alerts mention: GitHub logins or @org/team; unset: CODEOWNERS for `paths`
    owners: Annotated[tuple[Owner, ...], Field(min_length=1)] | None = None
    alert: AlertSettings = Field(default_factory=AlertSettings)
    diagnose: DiagnoseSettings = Field(default_factory=DiagnoseSettings)
    # what a trainer node asks for per GPU, and a parameter-server node (never a GPU);
    # unset: the stack's defaults
    resources: TrainerResources | None = None
    pserver: PserverResources | None = None
    # the file it was read from, named when the stack cannot place one of its configs
    where: Annotated[str, Field(exclude=True)] = ""

    @field_validator("configs")
    @classmethod
    def _unique_names(cls, configs: tuple[SuiteConfig, ...]) -> tuple[SuiteConfig, ...]:
        require_unique_names(c.name for c in configs)
        if configs[0].when is not None:
            raise ValueError(
                f"{configs[0].name} is the base of the others' speedup and efficiency: it "
                "runs on every event (no `when:`)"
            )
        return configs

    def runs_on_schedule(self) -> bool:
        """Whether a config of it names `schedule` in its `when:` (a schedule starts no suite
        that would measure only its base config)."""
        return any(c.when is not None and "schedule" in c.when for c in self.configs)

    def for_event(self, event: str, labels: Iterable[str] = ()) -> Suite:
        """The suite with only the configs that run on ``event`` (the first, every other's
        base, always does)."""
        chosen = tuple(c for c in self.configs if c.runs_on(event, labels))
        if len(chosen) == len(self.configs):
            return self
        return self.model_copy(update={"configs": chosen})

    _reachable_target = field_validator("target_accuracy")(check_target)
    _loss_falls = field_validator("quality")(check_quality)

    @field_validator("source")
    @classmethod
    def _url_template_or_none(cls, source: str) -> str:
        if source == NO_SOURCE:
            return source
        if not re.match(r"^(https://|ssh://|git@|file://|/)\S+$", source):
            raise ValueError(f"must be a clone URL template such as {DEFAULT_SOURCE} or 'none'")
        if re.match(r"^(https|ssh|file)://[^/]*@", source) and (
            source.startswith("https://") or ":" in source.split("//", 1)[1].split("@", 1)[0]
        ):
            # it would reach the code as DISTKPI_SOURCE_URL; the runner holds the clone token
            raise ValueError("must not hold credentials: the clone token is the runner's")
        unknown = set(re.findall(r"\{(\w*)\}", source)) - {"repo"}
        if unknown:
            raise ValueError(f"knows only {{repo}}, not {', '.join(sorted(unknown))}")
        return source

    @field_validator("image")
    @classmethod
    def _image_has_a_repository(cls, image: str | None) -> str | None:
        if image is not None and not re.match(
            r"^[^\s:@{}]+(:[^\s]+|@sha256:[0-9a-f]+)?$", image.replace("{sha}", "x")
        ):
            raise ValueError("must name an image repository, e.g. registry/name:{sha}")
        return image

    @model_validator(mode="after")
    def _paired_needs_both_commits(self) -> Suite:
        """A paired job checks out the base and the head side by side in one container, so
        its code must come from a clone, not from a per-commit image or the image itself."""
        if self.verdict.paired is None:
            return self
        why = self.why_not_paired()
        if why is None:
            return self
        error = PydanticCustomError("paired_code", "{why}", {"why": why})
        raise ValidationError.from_exception_data(
            "Suite", [InitErrorDetails(type=error, loc=("verdict", "paired"), input=None)]
        )

    def why_not_paired(self) -> str | None:
        """Why a job of this suite cannot hold two checkouts side by side, or None."""
        if self.image is not None and "{sha}" in self.image:
            return f"image {self.image} holds one commit's code; a paired job runs two commits"
        if self.source == NO_SOURCE:
            return "source: none runs the image's own code; a paired job checks out two commits"
        return None

    def runs_for(self, repo: str) -> bool:
        return self.repos is None or repo in self.repos

    def touched_by(self, changed: Sequence[str] | None) -> bool:
        """Whether changes to these files concern the suite; an unknown list (None) does."""
        if self.paths is None or changed is None:
            return True
        patterns = [_glob(p) for p in self.paths]
        return any(p.fullmatch(path) for p in patterns for path in changed)

    def source_url(self, repo: str) -> str:
        """The clone URL of ``repo``, or 'none' when the image holds the code."""
        return self.source if self.source == NO_SOURCE else self.source.replace("{repo}", repo)

    def image_for(self, sha: str) -> str | None:
        return self.image.replace("{sha}", sha) if self.image else None

    def specs(self) -> tuple[ConfigSpec, ...]:
        return tuple(c.spec() for c in self.configs)


def _glob(pattern: str) -> re.Pattern[str]:
    """A path glob: `**` any folders (or none), `*` and `?` within one name."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def parse_suite(text: str | bytes, where: str) -> Suite:
    """A suite from YAML text; ContractError naming ``where`` and each bad field."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ContractError(f"{where}: not valid YAML: {_yaml_problem(exc)}") from exc
    if isinstance(data, dict):
        data = {**data, "where": where}
    try:
        return Suite.model_validate(data)
    except ValidationError as exc:
        raise ContractError(f"{where}: invalid suite: {describe_errors(exc)}") from exc


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's error in one line: its problem and where (its str() spans several)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark else problem


def load_suite(path: Path) -> Suite:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ContractError(f"{path}: cannot be read: {exc.strerror}") from exc
    return parse_suite(text, str(path))


def load_suites(folder: Path) -> list[Suite]:
    suites = [load_suite(p) for p in sorted(folder.glob("*.yaml"))]
    names = [s.name for s in suites]
    if len(set(names)) != len(names):
        raise ContractError(f"{folder}: two suites share a name")
    return suites


@dataclass(frozen=True)
class BrokenSuite:
    """A deployed suite file that is not a valid suite; `name` is the file's name, which
    (having a dot) no suite's name can be, so its status never hides a real suite's."""

    name: str
    problem: str


def parse_deployed_suites(
    files: Iterable[tuple[str, str | bytes]], where: str
) -> tuple[list[Suite], list[BrokenSuite]]:
    """Every (file name, content) under ``where`` read as a suite. A bad file, or one whose
    suite name an earlier file already uses, is set aside so that the others still run."""
    suites: list[Suite] = []
    broken: list[BrokenSuite] = []
    owners: dict[str, str] = {}
    for name, content in files:
        try:
            suite = parse_suite(content, f"{where}{name}")
        except ContractError as exc:
            broken.append(BrokenSuite(name, str(exc)))
            continue
        if suite.name in owners:
            problem = f"{where}{name}: suite name {suite.name!r} is taken by {owners[suite.name]}"
            broken.append(BrokenSuite(name, problem))
            continue
        owners[suite.name] = name
        suites.append(suite)
    return suites, broken

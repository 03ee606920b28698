"""The job environment: every DISTKPI_* variable that passes between the launcher, the node
runner and the code under test, named here once, and the launcher's part as one model.

People script against these names and values (the table in
docs/tutorials/your-benchmark.md): a name or a value's format never changes here without a
note there. The launcher writes `JobEnvironment`
(domain/planning/jobs.py); the node reads its part once (distkpi_cli/node/settings.py) and
gives the code what `framework_environment` adds (distkpi_cli/node/placement.py).

A new job variable: its name here, a field of `JobEnvironment` written in `variables()`
when the launcher sets it, a field of `NodeSettings` when the node reads it, and a row in
the table in docs/tutorials/your-benchmark.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PREFIX = "DISTKPI_"

# the launcher's, on every job
RUN_ID = "DISTKPI_RUN_ID"
CONFIG = "DISTKPI_CONFIG"
S3_PREFIX = "DISTKPI_S3_PREFIX"
REPO = "DISTKPI_REPO"
SHA = "DISTKPI_SHA"
MODEL = "DISTKPI_MODEL"
TRAINERS = "DISTKPI_TRAINERS"
GPUS_PER_TRAINER = "DISTKPI_GPUS_PER_TRAINER"
PSERVERS = "DISTKPI_PSERVERS"
BATCH_SIZE = "DISTKPI_BATCH_SIZE"
TARGET_ACCURACY = "DISTKPI_TARGET_ACCURACY"
SOURCE_URL = "DISTKPI_SOURCE_URL"
SETUP = "DISTKPI_SETUP"
COMMAND = "DISTKPI_COMMAND"
COMMAND_TIMEOUT_S = "DISTKPI_COMMAND_TIMEOUT_S"
# the launcher's, when they apply
GOLDEN = "DISTKPI_GOLDEN"
# how the node summarises logs where the suite reads them its own way (domain/parse_settings.py)
PARSE_SETTINGS = "DISTKPI_PARSE_SETTINGS"
EPOCHS = "DISTKPI_EPOCHS"
BASE_SHA = "DISTKPI_BASE_SHA"
PAIRED = "DISTKPI_PAIRED"
PROFILE_STEPS = "DISTKPI_PROFILE_STEPS"  # a diagnosis job's: the steps each run profiles
MANIFEST_KEY = "DISTKPI_MANIFEST_KEY"  # this config's signing key (domain/signing.py)
# the Batch adapter's, per node group
ROLE = "DISTKPI_ROLE"
# the node's own settings: the operator's or the local executor's, never the launcher's
WORKDIR = "DISTKPI_WORKDIR"
SETUP_TIMEOUT_S = "DISTKPI_SETUP_TIMEOUT_S"
RENDEZVOUS_S = "DISTKPI_RENDEZVOUS_S"
NODE_WAIT_S = "DISTKPI_NODE_WAIT_S"
DECISION_WAIT_S = "DISTKPI_DECISION_WAIT_S"
DECISION_POLL_S = "DISTKPI_DECISION_POLL_S"
CODE_MAX_TASKS = "DISTKPI_CODE_MAX_TASKS"
NODE_ADDRESS = "DISTKPI_NODE_ADDRESS"
INSTANCE_TYPE = "DISTKPI_INSTANCE_TYPE"
RUN_AS_UID = "DISTKPI_RUN_AS_UID"
RUN_AS_GID = "DISTKPI_RUN_AS_GID"
SECRETS_FD = "DISTKPI_SECRETS_FD"
GIT_TOKEN = "DISTKPI_GIT_TOKEN"
CACHE_DIR = "DISTKPI_CACHE_DIR"
FAIL_AT_EPOCH = "DISTKPI_FAIL_AT_EPOCH"  # the local executor's fault, for the demo benchmark
# what the node adds for the code (besides the launcher's above)
ROLE_RANK = "DISTKPI_ROLE_RANK"
NODE_INDEX = "DISTKPI_NODE_INDEX"
NUM_NODES = "DISTKPI_NUM_NODES"
SOURCE_DIR = "DISTKPI_SOURCE_DIR"
LOG_DIR = "DISTKPI_LOG_DIR"
PROFILE_DIR = "DISTKPI_PROFILE_DIR"  # where a diagnosis job's run writes its traces
# the folder of DISTKPI_LOG_DIR that DISTKPI_PROFILE_DIR is: its files are the traces
PROFILE_FOLDER = "profile"


def layout_variable(name: str) -> str:
    """A config's parallel layout entry as its variable: tp -> DISTKPI_TP."""
    return f"{PREFIX}{name.upper()}"


@dataclass(frozen=True)
class PairedVariables:
    base_sha: str
    max_pairs: int
    warmup: bool

    def value(self) -> str:
        """DISTKPI_PAIRED's value, exactly as people script against it."""
        return json.dumps({"max_pairs": self.max_pairs, "warmup": self.warmup})


@dataclass(frozen=True)
class JobEnvironment:
    """What the launcher puts in one config's job, every node's the same."""

    run_id: str
    config: str
    s3_prefix: str
    repo: str
    sha: str
    model: str
    trainers: int
    gpus_per_trainer: int
    pservers: int
    batch_size: int
    target_accuracy: str
    source_url: str
    setup: Sequence[Any]
    command: Sequence[Any]
    command_timeout_s: int | float
    layout: Mapping[str, Any] = field(default_factory=dict)
    golden: str | None = None
    epochs: int | None = None
    paired: PairedVariables | None = None
    profile_steps: int | None = None
    manifest_key: str | None = None
    # the run's parse settings as JSON, where they are not the engine's defaults
    parse_settings: str | None = None

    def variables(self) -> dict[str, str]:
        """The job's variables, each name and value as the table in
        docs/tutorials/your-benchmark.md says."""
        env = {
            RUN_ID: self.run_id,
            CONFIG: self.config,
            S3_PREFIX: self.s3_prefix,
            REPO: self.repo,
            SHA: self.sha,
            MODEL: self.model,
            TRAINERS: str(self.trainers),
            GPUS_PER_TRAINER: str(self.gpus_per_trainer),
            PSERVERS: str(self.pservers),
            BATCH_SIZE: str(self.batch_size),
            TARGET_ACCURACY: self.target_accuracy,
            SOURCE_URL: self.source_url,
            SETUP: json.dumps([list(c) if isinstance(c, tuple) else c for c in self.setup]),
            COMMAND: json.dumps(list(self.command)),
            COMMAND_TIMEOUT_S: str(self.command_timeout_s),
        }
        env |= {layout_variable(k): str(v) for k, v in self.layout.items()}
        if self.golden is not None:
            env[GOLDEN] = self.golden
        if self.epochs is not None:
            env[EPOCHS] = str(self.epochs)
        if self.paired is not None:
            env[BASE_SHA] = self.paired.base_sha
            env[PAIRED] = self.paired.value()
        if self.profile_steps is not None:
            env[PROFILE_STEPS] = str(self.profile_steps)
        if self.manifest_key is not None:
            env[MANIFEST_KEY] = self.manifest_key
        if self.parse_settings is not None:
            env[PARSE_SETTINGS] = self.parse_settings
        return env

"""What each suite field means, by its path in the suite (`configs[].name`). The suite
model says its type, default and whether it is required; this says what it is for. A
field the model gains without a meaning here fails `python -m distkpi_cli.reference` and
tests/unit/test_docs_reference.py, so the reference never lacks a row."""

from __future__ import annotations

_PATTERN = "An RE2 pattern (no look-around or back-references) matched against every log line"
_VALUE = (
    "Two named groups of the pattern and one operator, e.g. `'num / den'`: the value is "
    "computed from them (a fixed grammar, never evaluated code); unset, the `value` group"
)
_PER = (
    "What one matched value counts: `card` (one GPU), `process` (its log), `node` or `job`; "
    "the reports are added up accordingly"
)

MEANINGS: dict[str, str] = {
    "name": "The suite's name: the model in statuses (`distkpi/<name>`), history and reports",
    "command": (
        "What every node runs in the checkout of the commit under test (`distkpi node`), as a "
        "list of arguments; `${NAME}` in an argument is expanded from the node's variables"
    ),
    "source": (
        "Where the code under test comes from: a clone URL template with `{repo}`, or `none` "
        "when the image holds the code. It must hold no credentials (the clone token is the "
        "stack's `SourceTokenSecretArn`)"
    ),
    "setup": (
        "Commands run in the checkout before the command, as the code's user: each a list of "
        "arguments, or a string run by `sh -c`"
    ),
    "image": (
        "The job image; `{sha}` is replaced by the commit under test (an image your CI builds "
        "per commit). Unset: the stack's `JobImage`"
    ),
    "command_timeout_s": (
        "Seconds the command may run on a node before its process group is stopped; the node "
        "then ends with exit code 124"
    ),
    "paths": (
        "Glob patterns (`**` any folders): a change that touches none of them skips the suite. "
        "Unset: every change runs it"
    ),
    "repos": "The repositories (`owner/name`) this suite runs for. Unset: every one",
    "accuracy_direction": (
        "`higher`: the quality metric improves as it rises (top-1); `lower`: as it falls "
        "(an error rate, a perplexity, a loss)"
    ),
    "target_accuracy": (
        "The quality the time to accuracy is measured to: a number (within [0, 1] for "
        "`higher`, above 0 for `lower`), or named parts that must all be reached"
    ),
    "accuracy_pass": (
        "The pass (epoch, as the logs number them) whose test accuracy counts; the job gets "
        "`DISTKPI_EPOCHS` = it + 1. Unset: the last test accuracy reported"
    ),
    "accuracy_tolerance": (
        "How far a config's test accuracy may fall below the base config's before its "
        "accuracy delta fails the run"
    ),
    "configs": (
        "The matrix: one job per config, each trainer and each parameter server one node; "
        "the config with the fewest GPUs is the speedup's base"
    ),
    "configs[].name": "The config's name, e.g. `1x8` or `2x8-4ps`; unique in the suite",
    "configs[].trainers": "Trainer nodes",
    "configs[].gpus_per_trainer": "GPUs each trainer node uses",
    "configs[].pservers": "Parameter-server nodes (CPU only)",
    "configs[].batch_size": (
        "The global batch size over all the config's trainer GPUs "
        "(`DISTKPI_BATCH_SIZE`; the job divides it)"
    ),
    "configs[].tp": "Tensor-parallel size; tp x pp x dp x cp must be the config's GPUs",
    "configs[].pp": "Pipeline-parallel size",
    "configs[].dp": "Data-parallel size; left out, what tp x pp x cp leave of the GPUs",
    "configs[].ep": "Expert-parallel size",
    "configs[].cp": "Context-parallel size",
    "configs[].zero_stage": "The ZeRO stage (0 to 3)",
    "configs[].micro_batch": "The micro-batch, in samples",
    "configs[].global_batch": "The global batch, in samples",
    "configs[].seq_len": "The config's sequence length, in tokens",
    "warmup_reports": (
        "Throughput reports each log drops as warm-up before averaging. Unset: the first 5%, "
        "at least one"
    ),
    "metrics": (
        "How this suite's logs state KPIs: patterns that take precedence over the built-in "
        "readers for the KPIs they name (the others are still read)"
    ),
    "metrics.throughput": "Samples/s: every matching line is one report",
    "metrics.throughput.pattern": f"{_PATTERN}; its `value` group is the number",
    "metrics.throughput.per": _PER,
    "metrics.samples_per_s": "Throughput by another name, usually derived from two groups",
    "metrics.samples_per_s.pattern": _PATTERN,
    "metrics.samples_per_s.value": _VALUE,
    "metrics.samples_per_s.per": _PER,
    "metrics.test_accuracy": "The quality metric: every matching line is one evaluation",
    "metrics.test_accuracy.pattern": f"{_PATTERN}; its `value` group is the number",
    "metrics.time_marks": "The clock for the time to accuracy",
    "metrics.time_marks.start": "A line matching it starts the clock",
    "metrics.time_marks.pattern": (
        "Its `time` group dates each line (unix seconds, or a date and time; UTC unless it says)"
    ),
    "metrics.tokens_per_s": "Tokens/s",
    "metrics.tokens_per_s.pattern": _PATTERN,
    "metrics.tokens_per_s.value": _VALUE,
    "metrics.tokens_per_s.per": _PER,
    "metrics.step_time_s": "The time of one training step",
    "metrics.step_time_s.pattern": _PATTERN,
    "metrics.step_time_s.value": _VALUE,
    "metrics.step_time_s.unit": "The unit of a number that states none",
    "metrics.loss": "The training loss; a `step` group, when the pattern has one, is its step",
    "metrics.loss.pattern": _PATTERN,
    "metrics.loss.value": _VALUE,
    "metrics.gpu_memory": "GPU memory",
    "metrics.gpu_memory.pattern": _PATTERN,
    "metrics.gpu_memory.value": _VALUE,
    "metrics.gpu_memory.unit": "The unit of a number that states none",
    "metrics.gpu_memory.role": "Whose memory it is: trainers' or parameter servers'",
    "dtype": "The precision the MFU's peak is taken at",
    "seq_len": "Tokens per sample, for tokens/s from samples/s",
    "flops_per_token": "Model FLOPs per token, for TFLOP/s per GPU and the MFU",
    "model_flops": (
        "The transformer's shape, for FLOPs per token by the rule 6 N + 12 L H Q T when "
        "`flops_per_token` is not given"
    ),
    "model_flops.params": "N: the model's parameters",
    "model_flops.layers": "L: its layers",
    "model_flops.hidden": "H Q: its hidden size (heads x head dimension)",
    "quality": (
        "What convergence is: `eval` (an evaluation's test accuracy) or `loss` (the training "
        "loss; needs `accuracy_direction: lower`)"
    ),
    "alignment": "How close every config's per-step loss must stay to the base config's",
    "alignment.max_rel_diff": "The largest relative difference allowed",
    "alignment.from_step": "The first step compared",
    "golden": (
        "A file of the repository under test holding a golden loss curve (Megatron's layout); "
        "each config's loss is compared with it"
    ),
    "verdict": "Which KPIs fail a change and how sure a regression must be",
    "verdict.enforced": "The KPIs judged against their history",
    "verdict.enforced_by_suite": (
        "Set by distkpi from whether the suite lists `enforced`: do not set it. When true, "
        "an enforced KPI a config can report and does not is the run's error"
    ),
    "verdict.tolerance": "Per KPI, the relative change allowed while the history is short",
    "verdict.default_tolerance": "The tolerance of a KPI `tolerance` does not name",
    "verdict.false_failure_rate": (
        "The chance that an unchanged commit's run fails, all its enforced KPIs together"
    ),
    "verdict.confidence": "Older suites' name for 1 - `false_failure_rate`",
    "verdict.window": "The latest history values a KPI is judged against",
    "verdict.min_history": (
        "Values needed before the noise is estimated from the history; below it, the tolerance"
    ),
    "verdict.short_history": (
        "Below `min_history`: `fail` (a KPI beyond the tolerance regresses) or `warn` "
        "(it is said in the verdict and fails nothing)"
    ),
    "verdict.count_repeats": (
        "Every run of a commit counts in the baseline, not only its latest: repeated runs "
        "of one commit measure the machine's noise"
    ),
    "verdict.change_point_p": (
        "The significance at which a step change in the history (E-Divisive) starts a new baseline"
    ),
    "verdict.confirm": "Re-run the configs in doubt before failing them",
    "verdict.confirm.screen": "The per-run confidence of the looser range that puts a run in doubt",
    "verdict.confirm.max_runs": "Runs of a config at most, the first included",
    "verdict.confirm.machine_share": (
        "The share of the run-to-run variance that belongs to the machine and is the same "
        "on a re-run, so averaging does not remove it"
    ),
    "verdict.paired": (
        "Measure the merge base and the head alternately in one job on the same nodes, and "
        "judge the paired differences"
    ),
    "verdict.paired.max_pairs": "Pairs at most; each pair is a look after which a config may stop",
    "verdict.paired.warmup": "An unmeasured warm-up run of the base first",
    "verdict.paired.screen": "The per-run rate of the looser range that keeps a config going",
    "verdict.paired.consistency_z": (
        "A failure also needs the pairs without the most harmful one to show harm at this z"
    ),
    "bisect": "Bisect a branch's regression to the commit that made it",
    "bisect.enabled": "Whether a regression on a branch starts a bisection",
    "bisect.max_runs": (
        "Midpoints a bisection may measure. Unset: enough for its range, ceil(log2(commits))"
    ),
    "resources": "What a trainer node asks for per GPU. Unset: the stack's defaults",
    "resources.vcpus_per_gpu": "vCPUs per GPU (the stack's `VcpusPerGpu` otherwise)",
    "resources.memory_mib_per_gpu": (
        "Memory (MiB) per GPU (the stack's `MemoryMiBPerGpu` otherwise)"
    ),
    "pserver": "What a parameter-server node asks for (never a GPU). Unset: the stack's defaults",
    "pserver.vcpus": "vCPUs (the stack's `PserverVcpus` otherwise)",
    "pserver.memory_mib": "Memory in MiB (the stack's `PserverMemoryMiB` otherwise)",
    "comment": (
        "When its one pull-request comment is written: `always`, `on_change` (the verdict or "
        "a KPI's judgement differs from what the comment shows) or `never`"
    ),
    "owners": (
        "Who its alerts mention: GitHub logins or `@org/team`. Unset: the repository's "
        "CODEOWNERS for the suite's `paths`"
    ),
    "alert": (
        "Which results alert the owners besides the default branch's regressions and "
        "bisection culprits, which always do"
    ),
    "alert.pull_requests": "A pull request's failure alerts the owners too",
    "diagnose": (
        "A profiled pass of base and head after a regression: when (`on`) and how many "
        "steps each profiles"
    ),
    "diagnose.on": (
        "`regression` (a regressed throughput, tokens/s, speedup, efficiency or step time), "
        "`always` (every run with a base to compare with) or `never`"
    ),
    "diagnose.steps": "Steps profiled per commit (`DISTKPI_PROFILE_STEPS`), after the warm-up",
    "verdict.acceptable": (
        "The KPIs a writer may accept as an intended regression (`/distkpi accept <reason>`); "
        "unset: every KPI"
    ),
    "configs[].when": (
        "Which deliveries run the config: `pull_request`, `push`, `label:<name>` (a pull "
        "request with that label) or `schedule`. Unset: every one. The first config always runs"
    ),
}

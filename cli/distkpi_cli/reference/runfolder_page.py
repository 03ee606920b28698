"""The run folder's reference: run.json and the node manifests, from their JSON Schemas."""

from __future__ import annotations

from typing import Any

from distkpi_cli.reference.schema_tables import markdown_table, rows

HEAD = """\
# The run folder and its manifests

A run is a folder, in S3 under `runs/<run_id>/` and the same on local disk
(`distkpi local` copies each to `out/local/runs/<run_id>`); `distkpi kpis RUN_DIR` computes
its KPIs anywhere. [The architecture](../architecture.md#the-run-folder) says how it is
written and read. Its layout:

```text
runs/<run_id>/
  run.json                        the launcher: the run, its suite's settings, its configs
  <config>/node-<i>.json          node i, last, after its files: its manifest (signed)
  <config>/logs/<role>-<rank>.log each trainer's and pserver's stdout and stderr
  <config>/gpu/...                nvidia-smi samples (kind gpu_memory)
  <config>/files/...              what the command left in DISTKPI_LOG_DIR (kept, not parsed)
  <config>/rendezvous/node-<i>.json  each node's address and ports
  <config>/golden.json            the suite's golden curve, when it names one
  <config>/pair-<p>/...           a paired run: each pair's a/ and b/ files, decision.json
  kpis.json                       the publisher: the run's KPIs (schemas/kpis.schema.json)
```

The schemas are in `layers/distkpi/distkpi/schemas/`.

"""


def page(run_schema: dict[str, Any], node_schema: dict[str, Any]) -> str:
    return (
        HEAD
        + "## run.json\n\n"
        + f"{run_schema.get('title', '')}.\n\n"
        + markdown_table(rows(run_schema))
        + "\n## &lt;config&gt;/node-&lt;i&gt;.json\n\n"
        + f"{node_schema.get('title', '')}.\n\n"
        + markdown_table(rows(node_schema))
    )

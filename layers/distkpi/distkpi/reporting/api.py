"""The history as JSON files, the site's data and the query API (docs/reference/history-api.md):

api/index.json                                          every published history, its latest run
api/series/<owner>/<name>/<branch>/<model>.json         a history's head: KPIs, configs,
                                                        hardware, its chunks, its marks
api/series/<owner>/<name>/<branch>/<model>/<YYYY-MM>.json  its points of one month, oldest first
                                                        (a busy month goes on in YYYY-MM.2.json)
api/runs/<run_id>.json                                  one run: its KPIs and their judgement

Pure: history records, runs and resets in, plain dicts out. Every update is a function of
the file as read and what one run adds, so a writer that lost a conditional write reads the
file again and applies the same update (services/site.py); applying it twice changes
nothing (points are keyed by run and config, marks by what they mark)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from distkpi.domain.judging.settings import ALL_KPIS
from distkpi.domain.kpis import catalogue
from distkpi.domain.records import HistoryRecord, ResetRecord

if TYPE_CHECKING:
    from distkpi.domain.judging.evaluation import Evaluation
    from distkpi.domain.records import RunRecord
    from distkpi.domain.regressions import Regression

API = "api/"
INDEX_SCHEMA = "distkpi.api.index/1"
SERIES_SCHEMA = "distkpi.api.series/1"
CHUNK_SCHEMA = "distkpi.api.chunk/1"
RUN_SCHEMA = "distkpi.api.run/1"
REGRESSIONS_SCHEMA = "distkpi.api.regressions/1"
INDEX = "index.json"
REGRESSIONS = "regressions.json"
SPARKLINE_KPI = "throughput"
SPARKLINE_RUNS = 30
# a change point is looked for in a config's last this many values of a KPI in a chunk
CHANGE_WINDOW = 64
CHANGE_MIN = 8  # and only with at least this many (as the old pages did)
# a month's chunk holds about this many points (whole runs); a busy month goes on in parts
# (YYYY-MM.2.json, ...), so that no file, and no publish's read and write of it, outgrows it
CHUNK_POINTS = 1000
REPORT_LINK = "../reports/{run_id}/index.html"  # from the site's root: the bucket's layout
UNKNOWN = "unknown"
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_POINT_VERDICT = {
    "pass": "ok",
    "regressed": "regressed",
    "improved": "improved",
}
Point = dict[str, Any]


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite number in it as None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def path_part(text: str) -> str:
    """A name as one path segment, reversibly: every character outside [A-Za-z0-9._-] as
    ~XX (its UTF-8 bytes in hex), so release/2.0 is release~2F2.0 and no two names meet."""
    if text in ("", ".", ".."):
        return "~" + text.encode().hex().upper() if text else "~"
    return "".join(c if c in _SAFE else "".join(f"~{b:02X}" for b in c.encode()) for c in text)


def series_base(repo: str, branch: str, model: str) -> str:
    owner, _, name = repo.partition("/")
    return "/".join(
        ("series", path_part(owner), path_part(name), path_part(branch), path_part(model))
    )


def series_path(repo: str, branch: str, model: str) -> str:
    """A history's head, relative to api/."""
    return series_base(repo, branch, model) + ".json"


def chunk_path(repo: str, branch: str, model: str, month: str, part: int = 1) -> str:
    """A history's points of one month (YYYY-MM), relative to api/: its first part, or
    another of a busy month's."""
    name = month if part == 1 else f"{month}.{part}"
    return f"{series_base(repo, branch, model)}/{name}.json"


def run_path(run_id: str) -> str:
    return f"runs/{path_part(run_id)}.json"


def month_of(finished_at: str) -> str:
    """The calendar month (UTC, as stored) of an ISO time: its chunk."""
    month = finished_at[:7]
    if len(month) != 7 or month[4] != "-" or not (month[:4] + month[5:]).isdigit():
        raise ValueError(f"not an ISO time: {finished_at!r}")
    return month


def point_verdict(verdict: str | None) -> str:
    return _POINT_VERDICT.get(verdict or "", "unjudged")


def points_of(records: Iterable[HistoryRecord]) -> list[Point]:
    """One point per record (a config of a run): every KPI it measured or was judged on."""
    points = []
    for r in records:
        kpis: dict[str, dict[str, Any]] = {}
        for name in ALL_KPIS:
            value = r.kpis.value(name)
            judged = r.judged.get(name) or {}
            if value is None and not judged:
                continue
            low, high = judged.get("low"), judged.get("high")
            raw = judged.get("verdict")
            kpis[name] = {
                "value": value,
                "lower": None if low is None else float(low),
                "upper": None if high is None else float(high),
                "verdict": point_verdict(raw),
                "judged": None if raw is None else str(raw),
            }
        points.append(
            {
                "run_id": r.run_id,
                "sha": r.sha,
                "author": None,
                "finished_at": r.finished_at,
                "config": r.config,
                "hardware": r.kpis.hardware or UNKNOWN,
                "verdict": r.verdict or UNKNOWN,
                "status": r.kpis.status.value,
                "kpis": kpis,
            }
        )
    return points


def _point_key(p: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(p["finished_at"]), str(p["run_id"]), str(p["config"]))


def merged_points(existing: Iterable[Point], new: Iterable[Point]) -> list[Point]:
    """The points of both, one per (run, config) (a new one replaces an old), oldest first."""
    by_key = {(p["run_id"], p["config"]): p for p in existing}
    by_key.update({(p["run_id"], p["config"]): p for p in new})
    return sorted(by_key.values(), key=_point_key)


def chunk(points: Sequence[Point]) -> dict[str, Any]:
    return {"schema": CHUNK_SCHEMA, "points": list(points)}


def kpi_meta(name: str, accuracy_direction: str = "higher") -> dict[str, str]:
    kpi = catalogue.kpi(name)
    higher = kpi.higher_is_better
    direction = accuracy_direction if higher is None else ("higher" if higher else "lower")
    return {"name": name, "label": kpi.label, "unit": kpi.unit, "direction": direction}


def empty_series(repo: str, branch: str, model: str) -> dict[str, Any]:
    return {
        "schema": SERIES_SCHEMA,
        "repo": repo,
        "branch": branch,
        "model": model,
        "runs": 0,
        "kpis": [],
        "configs": [],
        "hardware": [],
        "chunks": [],
        "marks": [],
    }


def chunk_entry(path: str, points: Sequence[Point], month: str, part: int) -> dict[str, Any]:
    return {
        "path": path,
        "from": points[0]["finished_at"],
        "to": points[-1]["finished_at"],
        "points": len(points),
        "runs": len({p["run_id"] for p in points}),
        "month": month,
        "part": part,
    }


def part_for(head: Mapping[str, Any], month: str, finished_at: str) -> int:
    """The part of its month a run finished at ``finished_at`` goes into: the last part that
    starts no later than it (the first when none does), or a new one after a full last part
    it is newer than. A part's range never reaches into the next one's, so a run published
    again finds the part that holds it."""
    parts = sorted(
        (c for c in head["chunks"] if c.get("month", c["from"][:7]) == month),
        key=lambda c: c.get("part", 1),
    )
    if not parts:
        return 1
    started = [c for c in parts if str(c["from"]) <= finished_at]
    target = started[-1] if started else parts[0]
    number = int(target.get("part", 1))
    last = target is parts[-1]
    if last and target["points"] >= CHUNK_POINTS and finished_at > str(target["to"]):
        return number + 1
    return number


def split_month(points: Sequence[Point]) -> list[list[Point]]:
    """A month's points (oldest first) as parts of whole runs, each of at least
    CHUNK_POINTS points but the last: as runs published one by one fill them."""
    parts: list[list[Point]] = [[]]
    for p in points:
        full = len(parts[-1]) >= CHUNK_POINTS and parts[-1][-1]["run_id"] != p["run_id"]
        if full and p["finished_at"] > parts[-1][-1]["finished_at"]:
            parts.append([])
        parts[-1].append(p)
    return parts


def _mark_key(m: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(m.get(k)) for k in ("kind", "at", "run_id", "config", "kpi"))


def merged_marks(existing: Iterable[Mapping[str, Any]], new: Iterable[Mapping[str, Any]]) -> list:
    by_key = {_mark_key(m): dict(m) for m in existing}
    by_key.update({_mark_key(m): dict(m) for m in new})
    return sorted(by_key.values(), key=lambda m: (str(m["at"]), _mark_key(m)))


def updated_series(
    head: Mapping[str, Any],
    entry: Mapping[str, Any],
    points: Sequence[Point],
    marks: Iterable[Mapping[str, Any]] = (),
    accuracy_direction: str = "higher",
) -> dict[str, Any]:
    """The head with a chunk's entry as written and ``points`` (the run's: their KPIs,
    configs and hardware join the head's). Chunks only grow, so an entry's counts and range
    only widen: a writer that saw an older version of the chunk never shrinks what a later
    one recorded."""
    out = dict(head)
    chunks = {c["path"]: dict(c) for c in head["chunks"]}
    old = chunks.get(entry["path"])
    if old is not None:
        entry = {
            "path": entry["path"],
            "from": min(old["from"], entry["from"]),
            "to": max(old["to"], entry["to"]),
            "points": max(old["points"], entry["points"]),
            "runs": max(old.get("runs", 0), entry["runs"]),
            "month": entry["month"],
            "part": entry["part"],
        }
    chunks[entry["path"]] = dict(entry)
    out["chunks"] = sorted(chunks.values(), key=lambda c: (c["from"], c["path"]))
    out["runs"] = sum(c.get("runs", 0) for c in out["chunks"])
    named = {k["name"] for k in head["kpis"]} | {k for p in points for k in p["kpis"]}
    known = {k["name"]: k for k in head["kpis"]}
    out["kpis"] = [known.get(n) or kpi_meta(n, accuracy_direction) for n in ALL_KPIS if n in named]
    out["configs"] = sorted(set(head["configs"]) | {p["config"] for p in points})
    out["hardware"] = sorted(set(head["hardware"]) | {p["hardware"] for p in points})
    out["marks"] = merged_marks(head["marks"], marks)
    return out


def change_point_marks(
    points: Sequence[Point],
    kpis: Iterable[str] | None = None,
    configs: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """Per config and KPI (of ``configs`` and ``kpis``, else all), the last step change
    (E-Divisive, as the verdicts use) of its last CHANGE_WINDOW values in ``points`` (a
    chunk, oldest first), as a mark at the first point after it."""
    from distkpi.domain.judging.changepoints import last_change_point  # numpy: not at import

    wanted = set(kpis) if kpis is not None else None
    of = set(configs) if configs is not None else None
    series: dict[tuple[str, str], list[Point]] = {}
    for p in points:
        if of is not None and p["config"] not in of:
            continue
        for name, v in p["kpis"].items():
            if v["value"] is not None and (wanted is None or name in wanted):
                series.setdefault((p["config"], name), []).append(p)
    marks = []
    for (config, name), held in sorted(series.items()):
        recent = held[-CHANGE_WINDOW:]
        if len(recent) < CHANGE_MIN:
            continue
        cut = last_change_point([float(p["kpis"][name]["value"]) for p in recent])
        if cut is None:
            continue
        at = recent[cut]
        marks.append(
            {
                "kind": "change_point",
                "at": at["finished_at"],
                "sha": at["sha"],
                "run_id": at["run_id"],
                "config": config,
                "kpi": name,
                "text": f"{config}: {catalogue.kpi(name).label} changed level",
            }
        )
    return marks


def judged_kpis(points: Iterable[Point]) -> list[str]:
    """The KPIs judged against their history somewhere in ``points`` (where change points
    matter); every measured one where none was."""
    judged, measured = set(), set()
    for p in points:
        for name, v in p["kpis"].items():
            measured.add(name)
            if v["judged"] not in (None, "not-enforced"):
                judged.add(name)
    return sorted(judged or measured)


def reset_marks(resets: Iterable[ResetRecord]) -> list[dict[str, Any]]:
    return [
        {
            "kind": "reset",
            "at": r.at,
            "sha": None,
            "run_id": None,
            "config": None if r.config == "*" else r.config,
            "kpi": None,
            "text": f"baseline reset: {r.reason} ({r.who})",
        }
        for r in resets
    ]


def culprit_mark(
    at: str, sha: str, run_id: str | None, configs: Sequence[str], text: str
) -> dict[str, Any]:
    return {
        "kind": "culprit",
        "at": at,
        "sha": sha,
        "run_id": run_id,
        "config": configs[0] if len(configs) == 1 else None,
        "kpi": None,
        "text": text,
    }


def sparkline(points: Sequence[Point], config: str | None) -> dict[str, Any]:
    """The last SPARKLINE_RUNS throughput values of ``config`` (of the most measured config
    when None), oldest first."""
    if config is None:
        counts: dict[str, int] = {}
        for p in points:
            if (p["kpis"].get(SPARKLINE_KPI) or {}).get("value") is not None:
                counts[p["config"]] = counts.get(p["config"], 0) + 1
        config = min(counts, key=lambda c: (-counts[c], c)) if counts else None
    values = [
        float(p["kpis"][SPARKLINE_KPI]["value"])
        for p in points
        if p["config"] == config and (p["kpis"].get(SPARKLINE_KPI) or {}).get("value") is not None
    ]
    return {"kpi": SPARKLINE_KPI, "config": config, "values": values[-SPARKLINE_RUNS:]}


def latest_of(points: Sequence[Point]) -> dict[str, Any]:
    newest = points[-1]
    return {
        "run_id": newest["run_id"],
        "sha": newest["sha"],
        "finished_at": newest["finished_at"],
        "verdict": newest["verdict"],
    }


def empty_index(updated_at: str) -> dict[str, Any]:
    return {"schema": INDEX_SCHEMA, "updated_at": updated_at, "histories": []}


def updated_index(
    index: Mapping[str, Any],
    head: Mapping[str, Any],
    latest: Mapping[str, Any],
    spark: Mapping[str, Any],
    updated_at: str,
) -> dict[str, Any]:
    """The index with one history's line: its run count from its head, its latest run and
    sparkline only when ``latest`` is not older than the one it holds (a republished old run
    leaves them)."""
    key = (head["repo"], head["branch"], head["model"])
    lines = {(h["repo"], h["branch"], h["model"]): dict(h) for h in index["histories"]}
    old = lines.get(key)
    line = {
        "repo": head["repo"],
        "branch": head["branch"],
        "model": head["model"],
        "runs": head["runs"],
        "latest": dict(latest),
        "series": series_path(*key),
        "sparkline": dict(spark),
    }
    if old is not None:
        line["runs"] = max(old["runs"], head["runs"])
        if str(old["latest"]["finished_at"]) > str(latest["finished_at"]):
            line["latest"], line["sparkline"] = old["latest"], old["sparkline"]
    lines[key] = line
    out = dict(index)
    out["updated_at"] = max(str(index.get("updated_at", "")), updated_at)
    out["histories"] = [lines[k] for k in sorted(lines)]
    return out


def _noise(low: float | None, high: float | None, baseline: float | None) -> float | None:
    """Half the allowed range, relative to the baseline: the noise a KPI is judged against."""
    if low is None or high is None or not baseline:
        return None
    return (high - low) / 2 / abs(baseline)


def run_file(run: RunRecord, evaluation: Evaluation) -> dict[str, Any]:
    """api/runs/<run_id>.json: what `distkpi kpis --json` gives, and how each KPI was judged."""
    judged = {(j.config, j.kpi): j for j in evaluation.judgements}
    configs: dict[str, dict[str, Any]] = {}
    for c in evaluation.kpis.configs:
        kpis: dict[str, Any] = {}
        for name in ALL_KPIS:
            j = judged.get((c.name, name))
            value = c.value(name)
            if value is None and j is None:
                continue
            kpis[name] = {
                "value": value,
                "lower": None if j is None else j.low,
                "upper": None if j is None else j.high,
                "verdict": point_verdict(None if j is None else j.verdict.value),
                "judged": None if j is None else j.verdict.value,
                "baseline": None if j is None else j.baseline,
                "noise": None if j is None else _noise(j.low, j.high, j.baseline),
            }
        configs[c.name] = kpis
    return {
        "schema": RUN_SCHEMA,
        "run_id": run.run_id,
        "repo": run.trigger.repo,
        "branch": run.history_branch,
        "sha": run.trigger.sha,
        "model": run.model,
        "event": run.trigger.event,
        "finished_at": run.finished_at or "",
        "verdict": evaluation.verdict.state.value,
        "description": evaluation.description,
        "report": REPORT_LINK.format(run_id=run.run_id),
        "series": series_path(run.trigger.repo, run.history_branch, run.model),
        "configs": configs,
        "kpis": evaluation.kpis.to_json(),
    }


def regression_entry(r: Regression) -> dict[str, Any]:
    """A regression as the regressions page lists it."""
    last = r.history[-1] if r.history else None
    return {
        "id": r.id,
        "state": r.state.value,
        "repo": r.repo,
        "branch": r.branch,
        "model": r.model,
        "config": r.config,
        "kpi": r.kpi,
        "run_id": r.run_id,
        "sha": r.sha,
        "opened_at": r.opened_at,
        "value": finite(r.value),
        "low": finite(r.low),
        "high": finite(r.high),
        "culprit": r.culprit,
        "diagnosis": r.diagnosis,
        "fixed_by": r.fixed_by,
        "note": last.note if last is not None and last.note else None,
    }


def empty_regressions() -> dict[str, Any]:
    return {"schema": REGRESSIONS_SCHEMA, "regressions": []}


def updated_regressions(
    current: Mapping[str, Any], repo: str, branch: str, model: str, now: Sequence[Regression]
) -> dict[str, Any]:
    """The site's regressions with one history's replaced by what its items say now (the
    newest opened first)."""
    others = [
        e
        for e in current.get("regressions", [])
        if (e.get("repo"), e.get("branch"), e.get("model")) != (repo, branch, model)
    ]
    entries = others + [regression_entry(r) for r in now]
    entries.sort(key=lambda e: (str(e["opened_at"]), str(e["id"])), reverse=True)
    return {"schema": REGRESSIONS_SCHEMA, "regressions": entries}

"""The key of every item kind in the one table (PK / SK), and of its two indexes.

RUN#<run_id>                  / RUN                 a run (TTL: RETENTION_DAYS)
                                GSI1: COMMIT#<repo>#<sha> / <created>#<run_id>
                                GSI2: RUNNING, then UNPUBLISHED / <time>#<run_id>
RUN#<run_id>                  / CONFIG#<name>       one of its configs (TTL, as the run)
JOB#<job_id>                  / JOB                 the run and config a Batch job serves (TTL)
DELIVERY                      / <function>#<hash>   a webhook delivery claimed, its answer
                                                    (Powertools' idempotency record, TTL)
PR#<repo>#<number>            / <created>#<run_id>  a run of a pull request (TTL)
HIST#<repo>#<branch>#<model>  / <created>#<run_id>#<config>  one config's KPIs of a run
RESET#<repo>#<branch>#<model> / <at>#<config>       an audited baseline reset
ALARM#<repo>#<branch>#<model> / ALARM               the configs alarmed of, the last pass
BISECT#<repo>#<branch>#<model> / <bad run_id>       a bisection of a regression
REGRESSION#<repo>#<branch>#<model> / <run>:<config>:<kpi>  a regression alerted on, its state
SERIES                        / <repo>#<branch>#<model>  a branch history's latest run (site index)
PRSERIES#<repo>               / <branch>#<model>    a pull request's history's latest run (TTL)
COMMENT#<repo>#<number>       / <suite>             a pull request's comment of a suite (TTL)
CHAT#<repo>#<suite>           / <hour>              chat messages sent in that hour (TTL)
CHECK#<repo>#<suite>@<sha>    / CHECK               a suite's check run with no run: its id (TTL)
GHAPP#REPO#<repo>             / INSTALLATION        the App's installation on a repository (TTL)
GHAPP#<installation>          / TOKEN               the installation's token, until it expires (TTL)
PACE#<installation or token>  / PACE                the next free slot of GitHub writes (TTL)
"""

from __future__ import annotations

RUNNING = "RUNNING"
UNPUBLISHED = "UNPUBLISHED"
_RUN = "RUN#"

Key = dict[str, str]


def run(run_id: str) -> Key:
    return {"PK": f"{_RUN}{run_id}", "SK": "RUN"}


def config(run_id: str, name: str) -> Key:
    return {"PK": f"{_RUN}{run_id}", "SK": f"CONFIG#{name}"}


def configs_of(run_id: str) -> tuple[str, str]:
    """The partition and sort-key prefix of a run's configs."""
    return f"{_RUN}{run_id}", "CONFIG#"


def run_id_of(partition: str) -> str:
    return partition.removeprefix(_RUN)


def commit(repo: str, sha: str) -> str:
    return f"COMMIT#{repo}#{sha}"


def ordered(at: str, run_id: str) -> str:
    return f"{at}#{run_id}"


# a running run's GSI2 sort key once a job started; sorts after every time-first key
STARTED = "started#"


def started(at: str, run_id: str) -> str:
    return f"{STARTED}{at}#{run_id}"


def job(job_id: str) -> Key:
    return {"PK": f"JOB#{job_id}", "SK": "JOB"}


def pull_request(repo: str, number: int) -> str:
    return f"PR#{repo}#{number}"


def history(repo: str, branch: str, model: str) -> str:
    return f"HIST#{repo}#{branch}#{model}"


def history_entry(created_at: str, run_id: str, config_name: str) -> str:
    return f"{created_at}#{run_id}#{config_name}"


def reset(repo: str, branch: str, model: str) -> str:
    return f"RESET#{repo}#{branch}#{model}"


def alarm(repo: str, branch: str, model: str) -> Key:
    return {"PK": f"ALARM#{repo}#{branch}#{model}", "SK": "ALARM"}


def bisections(repo: str, branch: str, model: str) -> str:
    return f"BISECT#{repo}#{branch}#{model}"


def bisection(repo: str, branch: str, model: str, bad_run_id: str) -> Key:
    return {"PK": bisections(repo, branch, model), "SK": bad_run_id}


def regressions(repo: str, branch: str, model: str) -> str:
    return f"REGRESSION#{repo}#{branch}#{model}"


def regression(repo: str, branch: str, model: str, regression_id: str) -> Key:
    return {"PK": regressions(repo, branch, model), "SK": regression_id}


SERIES = "SERIES"


def series_entry(repo: str, branch: str, model: str) -> Key:
    return {"PK": SERIES, "SK": f"{repo}#{branch}#{model}"}


def comment(repo: str, number: int, suite: str) -> Key:
    return {"PK": f"COMMENT#{repo}#{number}", "SK": suite}


def chat_hour(suite: str, hour: str) -> Key:
    return {"PK": f"CHAT#{suite}", "SK": hour}


def app_installation(repo: str) -> Key:
    return {"PK": f"GHAPP#REPO#{repo}", "SK": "INSTALLATION"}


def app_token(installation: int) -> Key:
    return {"PK": f"GHAPP#{installation}", "SK": "TOKEN"}


def pace(key: str) -> Key:
    return {"PK": f"PACE#{key}", "SK": "PACE"}


def suite_check(repo: str, external_id: str) -> Key:
    return {"PK": f"CHECK#{repo}#{external_id}", "SK": "CHECK"}


def pull_request_series(repo: str) -> str:
    return f"PRSERIES#{repo}"


def pull_request_series_entry(repo: str, branch: str, model: str) -> Key:
    return {"PK": pull_request_series(repo), "SK": f"{branch}#{model}"}

"""What the commands share: exit codes, the table they read, its options."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from distkpi.exceptions import DistkpiError

if TYPE_CHECKING:
    from distkpi.adapters.dynamo import DynamoTable

DEFAULT_STATE = Path("out/local/state")  # distkpi local's state folder (local/state.py)
FAILURE = 1
USAGE_ERROR = 2

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class UsageError(DistkpiError):
    """The command line names nothing usable (no table given or set, no such run)."""


@contextmanager
def open_table(args: argparse.Namespace, write: bool = False) -> Iterator[DynamoTable]:
    """The deployed table (--table), or with --local the local stack's or state folder's.
    AWS without a region or credentials is a UsageError saying what to set."""
    import os

    if args.local:
        from distkpi_cli.local.attach import local_table
        from distkpi_cli.local.state import StateFolder

        with local_table(StateFolder(Path(args.state)), write=write) as table:
            yield table
        return
    name = args.table or os.environ.get("TABLE_NAME")
    if not name:
        raise UsageError(
            "no table: give --table or set TABLE_NAME (the stack's RunsTableName), or --local"
        )
    import boto3
    from botocore.exceptions import (
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    from distkpi.adapters.aws import CLIENT_CONFIG
    from distkpi.adapters.dynamo import DynamoTable

    try:
        resource = boto3.resource("dynamodb", endpoint_url=args.endpoint_url, config=CLIENT_CONFIG)
        yield DynamoTable(name, resource.Table(name))
    except NoRegionError:
        raise UsageError(NO_REGION) from None
    except (NoCredentialsError, PartialCredentialsError):
        raise UsageError(NO_CREDENTIALS) from None
    except EndpointConnectionError as exc:  # something it relies on is down: exit 1
        raise DistkpiError(f"{exc}: check --endpoint-url or the network") from None


NO_REGION = (
    "no AWS region: set AWS_DEFAULT_REGION (or a region in ~/.aws/config for AWS_PROFILE) "
    "to the stack's region, or use --local"
)
NO_CREDENTIALS = (
    "no AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
    "(`aws configure` writes a profile), or use --local"
)


ANALYSIS_INSTALL = "pip install 'distkpi[analysis]'"


def require(modules: list[str], what: str) -> None:
    """UsageError with the install line when any of ``modules`` (an optional dependency of
    the CLI, never of the Lambda layer) is not installed."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(
            f"{what} needs {' and '.join(missing)}, which is not installed: {ANALYSIS_INSTALL}"
        )


def table_options(
    p: argparse.ArgumentParser, *, suite: bool = True, folder_flag: str = "--state"
) -> None:
    """--table, --endpoint-url, --local and the local state folder (``folder_flag``: a
    command whose --state means something else names it otherwise)."""
    if suite:
        p.add_argument("--repo", required=True, help="owner/name")
        p.add_argument("--model", required=True, help="suite name")
        p.add_argument(
            "--branch", default="develop", help="the history's branch (default: %(default)s)"
        )
    p.add_argument("--table", help="DynamoDB table (default: $TABLE_NAME)")
    p.add_argument(
        "--endpoint-url", help="AWS endpoint, e.g. a local moto server (default: AWS's own)"
    )
    p.add_argument(
        "--local",
        action="store_true",
        help="the running `distkpi local up`, or else the local state folder",
    )
    p.add_argument(
        folder_flag,
        dest="state",
        default=str(DEFAULT_STATE),
        help="with --local: the state folder (default: %(default)s)",
    )

"""The runner's secrets (node/isolation.py names them) kept out of its process environment:
its own S3 client takes its credentials from the runner's mapping, and every other child
of the runner (git, nvidia-smi, the hardware probes) gets an environment without them."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, MutableMapping
from typing import Any

from distkpi.adapters.aws import CLIENT_CONFIG
from distkpi.adapters.s3_runs import S3RunStore
from distkpi_cli.node.isolation import SECRET_VARIABLES


def is_secret(name: str) -> bool:
    return name in SECRET_VARIABLES or (name.startswith("AWS_") and "CREDENTIAL" in name)


def without_secrets(env: Mapping[str, str], keep: Collection[str] = ()) -> dict[str, str]:
    """``env`` less every secret but those in ``keep`` (git's token, for git)."""
    return {k: v for k, v in env.items() if k in keep or not is_secret(k)}


def take_secrets(environ: MutableMapping[str, str]) -> dict[str, str]:
    """The secrets of ``environ`` (os.environ), removed from it."""
    return {name: environ.pop(name) for name in [n for n in environ if is_secret(n)]}


def store_maker(env: Mapping[str, str]) -> Callable[[str], S3RunStore]:
    """S3RunStore for a bucket, its client signing with the credentials ``env`` holds (its
    access keys, else the container's credentials endpoint, as on Batch), whatever the
    process environment holds."""
    session: Any = None

    def make(bucket: str) -> S3RunStore:
        nonlocal session
        if session is None:
            session = _session(env)
        return S3RunStore(bucket, session.client("s3", config=CLIENT_CONFIG))

    return make


def _session(env: Mapping[str, str]) -> Any:
    import boto3
    import botocore.session
    from botocore.credentials import ContainerProvider, CredentialResolver, EnvProvider

    core = botocore.session.Session()
    providers = [EnvProvider(environ=dict(env)), ContainerProvider(environ=dict(env))]
    core.register_component("credential_provider", CredentialResolver(providers))
    return boto3.Session(botocore_session=core, region_name=env.get("AWS_DEFAULT_REGION"))

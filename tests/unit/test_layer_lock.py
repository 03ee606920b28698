"""The layer's lock (layers/distkpi/requirements.txt, what `sam build` installs) is exact,
keeps requirements.in's bounds, bundles boto3 with botocore, and names the versions this
test environment runs: the deployed layer is the tested one."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "distkpi"


def requirement_lines(path: Path) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def locked() -> dict[str, Requirement]:
    pins = {}
    for line in requirement_lines(LAYER / "requirements.txt"):
        requirement = Requirement(line)
        pins[canonicalize_name(requirement.name)] = requirement
    return pins


def pinned_version(requirement: Requirement) -> str:
    (spec,) = requirement.specifier
    assert spec.operator == "==", f"{requirement} is not an exact pin"
    return spec.version


def test_every_locked_package_is_pinned_to_one_version() -> None:
    for requirement in locked().values():
        assert not requirement.extras and requirement.marker is None, requirement
        pinned_version(requirement)


def test_the_lock_keeps_every_bound_of_requirements_in() -> None:
    pins = locked()
    for line in requirement_lines(LAYER / "requirements.in"):
        wanted = Requirement(line)
        name = canonicalize_name(wanted.name)
        assert name in pins, f"{wanted.name} is not locked: run make lock"
        assert wanted.specifier.contains(pinned_version(pins[name])), (wanted, pins[name])


def test_boto3_and_botocore_are_bundled_together() -> None:
    """Both in the layer, the botocore the locked boto3 asks for: never the runtime's."""
    pins = locked()
    assert {"boto3", "botocore", "s3transfer", "jmespath"} <= set(pins)
    (wants,) = [
        req
        for req in map(Requirement, requires("boto3") or [])
        if req.name == "botocore" and req.marker is None
    ]
    assert wants.specifier.contains(pinned_version(pins["botocore"])), wants


def test_the_tests_run_the_locked_versions() -> None:
    differ = {}
    for name, requirement in locked().items():
        try:
            installed = version(name)
        except PackageNotFoundError:
            installed = "not installed"
        if installed != pinned_version(requirement):
            differ[name] = (installed, pinned_version(requirement))
    assert not differ, f"installed vs locked: {differ}; reinstall with make (or run make lock)"

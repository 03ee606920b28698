"""The IAM policies template.yaml grants each function and the benchmark job, as identities in
moto, so that a call the template does not allow fails a test rather than a deployment.

moto checks an action against every policy of the caller's access key. How faithfully
depends on the service, and the translation says so rather than hide it:
- S3: moto passes the bucket or object ARN, so actions and resources are both checked.
- DynamoDB, Batch, Secrets Manager, SQS: moto passes "*" as the resource, so a statement
  scoped to an ARN would match nothing; these keep their actions and get Resource "*".
- Conditions: moto evaluates none for these calls (an Allow with a condition denies), so
  conditions are dropped here; tests of the template itself check them.
- Action names: IAM ignores their case, moto does not; both spellings are given.
Managed policies (Lambda's log and X-Ray writers) cover calls the code does not make
through boto3, and are left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from distkpi_cli.local.aws_stack import ACCOUNT
from distkpi_cli.local.template import resources_of_type

RESOURCE_CHECKED = ("s3:",)
_SUB = re.compile(r"\$\{([^}!]+)\}")


@dataclass(frozen=True)
class Identity:
    name: str
    access_key_id: str
    secret_access_key: str

    def credentials(self) -> dict[str, str]:
        return {
            "aws_access_key_id": self.access_key_id,
            "aws_secret_access_key": self.secret_access_key,
        }


class Resolver:
    """Intrinsic functions of the expanded template, with the stack's pseudo parameters.
    A resource's Ref or attribute becomes ``<LogicalId>`` or ``<LogicalId.Attr>``: only S3
    ARNs are checked by moto, and those are built from pseudo parameters alone."""

    def __init__(self, stack_name: str, region: str) -> None:
        self.values = {
            "AWS::Partition": "aws",
            "AWS::Region": region,
            "AWS::AccountId": ACCOUNT,
            "AWS::StackName": stack_name,
            "AWS::URLSuffix": "amazonaws.com",
        }

    def __call__(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self(item) for item in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, arg),) = node.items()
            intrinsics: dict[str, Callable[[Any], str]] = {
                "Ref": self._ref,
                "Fn::GetAtt": self._get_att,
                "Fn::Sub": self._sub,
                "Fn::Join": self._join,
            }
            intrinsic = intrinsics.get(key)
            if intrinsic is not None:
                return intrinsic(arg)
        return {key: self(value) for key, value in node.items()}

    def _ref(self, name: str) -> str:
        return self.values.get(name, f"<{name}>")

    def _get_att(self, arg: str | list[str]) -> str:
        return f"<{'.'.join(arg) if isinstance(arg, list) else arg}>"

    def _join(self, arg: list[Any]) -> str:
        return str(arg[0]).join(str(self(part)) for part in arg[1])

    def _sub(self, arg: str | list[Any]) -> str:
        text, names = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
        local = {key: self(value) for key, value in names.items()}

        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            return str(local.get(name) or self._ref(name))

        return _SUB.sub(value, text)


def role_statements(
    expanded: Mapping[str, Any], role: str, resolve: Resolver
) -> list[dict[str, Any]]:
    """Every statement of the inline policies of ``role``, intrinsics resolved."""
    props = resources_of_type(dict(expanded), "AWS::IAM::Role")[role]
    statements: list[dict[str, Any]] = []
    for policy in props.get("Policies", []):
        found = resolve(policy["PolicyDocument"]["Statement"])
        statements.extend(found if isinstance(found, list) else [found])
    return statements


def function_roles(expanded: Mapping[str, Any]) -> dict[str, str]:
    """Function logical id -> the logical id of the role SAM made for it."""
    return {
        name: props["Role"]["Fn::GetAtt"][0]
        for name, props in resources_of_type(dict(expanded), "AWS::Lambda::Function").items()
    }


def as_moto_checks(statement: Mapping[str, Any]) -> dict[str, Any]:
    """A statement as moto can check it (see the module's docstring)."""
    actions = (
        statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
    )
    checked = all(a.startswith(RESOURCE_CHECKED) for a in actions)
    return {
        "Effect": statement["Effect"],
        # IAM matches actions without regard to case; moto compares them as it spells them
        # (batch:submitjob, s3:GetObject), so both spellings are given.
        "Action": sorted({*actions, *(a.lower() for a in actions)}),
        "Resource": statement["Resource"] if checked else "*",
    }


def create_identity(iam: Any, name: str, statements: list[dict[str, Any]]) -> Identity:
    """An IAM user in moto holding exactly ``statements`` (as moto can check them)."""
    iam.create_user(UserName=name)
    document = {"Version": "2012-10-17", "Statement": [as_moto_checks(s) for s in statements]}
    iam.put_user_policy(UserName=name, PolicyName=name, PolicyDocument=json.dumps(document))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return Identity(name, key["AccessKeyId"], key["SecretAccessKey"])


ADMIN = [{"Effect": "Allow", "Action": "*", "Resource": "*"}]

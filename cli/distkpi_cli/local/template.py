"""Read the SAM template.yaml, so that local stacks and tests build exactly what AWS gets."""

from __future__ import annotations

from typing import Any

import yaml


class _CfnLoader(yaml.SafeLoader):
    """YAML with CloudFormation short tags (!Ref, !Sub, !GetAtt ...) kept as Fn:: mappings."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _tag)


def load_template(text: str) -> dict[str, Any]:
    return yaml.load(text, Loader=_CfnLoader)


def resources_of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {
        name: resource.get("Properties", {})
        for name, resource in template.get("Resources", {}).items()
        if resource.get("Type") == kind
    }


def table_definition(template: dict[str, Any], logical_id: str, table_name: str) -> dict[str, Any]:
    """CreateTable arguments for a table of the template (TTL and PITR are set apart)."""
    props = resources_of_type(template, "AWS::DynamoDB::Table")[logical_id]
    request: dict[str, Any] = {
        "TableName": table_name,
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
    }
    if "GlobalSecondaryIndexes" in props:
        request["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    return request


def ttl_attribute(template: dict[str, Any], logical_id: str) -> str | None:
    props = resources_of_type(template, "AWS::DynamoDB::Table")[logical_id]
    spec = props.get("TimeToLiveSpecification") or {}
    return spec.get("AttributeName") if spec.get("Enabled") else None


def bucket_settings(template: dict[str, Any], logical_id: str) -> dict[str, Any]:
    """The template's encryption and public access block of a bucket, as S3 API requests."""
    props = resources_of_type(template, "AWS::S3::Bucket")[logical_id]
    rules = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    return {
        "encryption": {
            "Rules": [
                {"ApplyServerSideEncryptionByDefault": r["ServerSideEncryptionByDefault"]}
                for r in rules
            ]
        },
        "public_access_block": props["PublicAccessBlockConfiguration"],
    }

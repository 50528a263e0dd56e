"""Resolves the intrinsic functions a template uses in function environments and mappings.

Attribute values come from the emulator (what moto answered when the resources were created
or described), so an environment variable gets the same value CloudFormation would give it.
An intrinsic this module does not know raises: a new stack feature must fail loudly here
rather than hand a function a dict where it expects a string.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ACCOUNT_ID = "123456789012"  # moto's default account


class UnresolvableError(ValueError):
    """The template uses an intrinsic or attribute the local platform cannot provide."""


def resolve(value: Any, attributes: Mapping[str, Mapping[str, str]], region: str) -> Any:
    """``attributes``: logical id -> {"Ref": ..., "Arn": ..., "StreamArn": ..., ...}."""
    if isinstance(value, list):
        return [resolve(item, attributes, region) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1:
        return {key: resolve(item, attributes, region) for key, item in value.items()}
    ((function, argument),) = value.items()
    if function == "Ref":
        return _ref(str(argument), attributes, region)
    if function == "Fn::GetAtt":
        logical_id, attribute = argument.split(".", 1) if isinstance(argument, str) else argument
        return _attribute(logical_id, attribute, attributes)
    if function == "Fn::Join":
        separator, parts = argument
        return str(separator).join(str(resolve(part, attributes, region)) for part in parts)
    if function.startswith("Fn::"):
        raise UnresolvableError(f"intrinsic {function} is not supported locally: {value!r}")
    return {function: resolve(argument, attributes, region)}


def _ref(name: str, attributes: Mapping[str, Mapping[str, str]], region: str) -> str:
    pseudo = {
        "AWS::Region": region,
        "AWS::AccountId": ACCOUNT_ID,
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
    }
    if name in pseudo:
        return pseudo[name]
    return _attribute(name, "Ref", attributes)


def _attribute(logical_id: str, attribute: str, attributes: Mapping[str, Mapping[str, str]]) -> str:
    try:
        return attributes[logical_id][attribute]
    except KeyError:
        raise UnresolvableError(f"{logical_id}.{attribute} has no local value (resource not emulated)") from None

"""What the template grants each function: its role's statements, and the resources they name."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.infra.synth import Synthesized

LOGICAL_ID_REFERENCE = re.compile(r'"(?:Ref|Fn::GetAtt)": (?:\["|")([A-Za-z0-9]+)')


def referenced_logical_ids(value: Any) -> set[str]:
    """The logical ids a template value names through Ref or Fn::GetAtt."""
    return set(LOGICAL_ID_REFERENCE.findall(json.dumps(value)))


def role_statements(s: Synthesized, function: dict[str, Any]) -> list[dict[str, Any]]:
    """Every statement of the function's role: its inline policies and the AWS::IAM::Policy on it."""
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    found: list[dict[str, Any]] = []
    for resource in s.json["Resources"].values():
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in props.get("Roles", []):
            found += props["PolicyDocument"]["Statement"]
    role = s.json["Resources"][role_id]["Properties"]
    found += [st for p in role.get("Policies", []) for st in p["PolicyDocument"]["Statement"]]
    return found


def granted_services(s: Synthesized, function: dict[str, Any]) -> set[str]:
    """The service prefixes of every action the role allows, managed policies included."""
    services = set()
    for statement in role_statements(s, function):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        services |= {action.split(":")[0] for action in actions}
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    for managed in s.json["Resources"][role_id]["Properties"].get("ManagedPolicyArns", []):
        name = json.dumps(managed)
        if "AWSLambdaBasicExecutionRole" in name:
            services.add("logs")
        if "AWSLambdaVPCAccessExecutionRole" in name:
            services |= {"logs", "ec2"}
    return services


def granted_logical_ids(s: Synthesized, function: dict[str, Any]) -> set[str]:
    return set().union(*(referenced_logical_ids(st.get("Resource")) for st in role_statements(s, function)))

"""A secret's text as Secrets Manager keeps it, read on each call (the key rings cache it)."""

from __future__ import annotations

from typing import Any

from mcp_platform.adapters.secrets import SecretsManagerText


class Client:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def get_secret_value(self, SecretId: str) -> dict[str, Any]:
        self.asked.append(SecretId)
        return {"SecretString": '{"current": "k1"}', "ARN": SecretId}


def test_the_secret_string_of_the_named_secret_on_every_read() -> None:
    client = Client()
    secret = SecretsManagerText(client, "arn:aws:secretsmanager:us-east-1:1:secret:keys")
    assert secret.read() == secret.read() == '{"current": "k1"}'
    assert client.asked == ["arn:aws:secretsmanager:us-east-1:1:secret:keys"] * 2

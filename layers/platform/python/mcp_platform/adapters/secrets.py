"""Secrets Manager as the application reads it: a secret's current text (``SecretText``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient


class SecretsManagerText:
    """The ``SecretString`` of ``secret_id`` (an ARN or a name), read on every call: the key
    rings that use it cache and refresh it themselves."""

    def __init__(self, client: SecretsManagerClient, secret_id: str) -> None:
        self._client = client
        self._secret_id = secret_id

    def read(self) -> str:
        response = self._client.get_secret_value(SecretId=self._secret_id)
        return str(response.get("SecretString", ""))

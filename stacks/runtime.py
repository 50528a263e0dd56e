"""Lambda runtime and architecture choices shared by every function and the layer."""

from __future__ import annotations

from aws_cdk import aws_lambda as lambda_

from stacks.config import PlatformConfig

# Lambda Web Adapter v1.1.0 (S1): the Python managed runtime cannot stream responses itself.
WEB_ADAPTER_ACCOUNT = "753240598075"
WEB_ADAPTER_VERSION = 30


RUNTIMES = {
    "3.12": lambda_.Runtime.PYTHON_3_12,
    "3.13": lambda_.Runtime.PYTHON_3_13,
    "3.14": lambda_.Runtime.PYTHON_3_14,
}


def lambda_runtime(config: PlatformConfig) -> lambda_.Runtime:
    """The managed runtime of the configured Python (context ``lambda_python``, .python-version)."""
    return RUNTIMES[config.lambda_python]


def architecture_of(config: PlatformConfig) -> lambda_.Architecture:
    return lambda_.Architecture.ARM_64 if config.architecture == "arm64" else lambda_.Architecture.X86_64


def web_adapter_layer_arn(region: str, config: PlatformConfig) -> str:
    name = "LambdaAdapterLayerArm64" if config.architecture == "arm64" else "LambdaAdapterLayerX86"
    return f"arn:aws:lambda:{region}:{WEB_ADAPTER_ACCOUNT}:layer:{name}:{WEB_ADAPTER_VERSION}"

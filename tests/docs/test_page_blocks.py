"""Every code block of the get-started page and the building pages is run or checked, so those
pages cannot drift from the code (tests/support/doc_blocks.py says how a block is marked).

- A features module (``module NAME``) is served by an endpoint started here, and with ``call`` or
  ``task`` called as a client would: in the 2026 era, answering every question it asks, or run
  as a task by the task worker. The tests shown beside a module (``pytest``) run as written.
- Shell commands are run when they are cheap and local (``curl`` and the MCP Inspector's CLI
  against the endpoint started here, with the page's address, key and handles replaced), or
  checked: a ``make`` target exists, and does what its comment says (``# = npx cdk deploy
  --all``); a CDK CLI command and its flags exist in the pinned CLI; ``python -m X`` answers
  ``--help``. A command that needs an AWS account is named in NEEDS_AN_ACCOUNT, with why.
- JSON blocks parse; a block that includes a file (pymdownx.snippets) is that file, tested where
  the file is; anything else is marked illustrative, with the reason.

One endpoint (moto server, the starter app plus the pages' modules, the task worker polling its
queue) serves the whole module, started only when a block needs it.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import mcp_tools
from local.conformance.suite import suite_environment
from local.functions import LambdaContext
from local.queue_poller import QueuePoller
from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.bootstrap.worker import build_handler
from mcp_platform.protocol.catalog import spec_of
from mcp_platform.protocol.tasks import EXTENSION_ID
from tests.support.aws import fake_credentials
from tests.support.doc_blocks import ROOT, Block, Command, blocks, commands, make_targets
from tests.support.endpoint import AwsStack, Instance, aws_stack, endpoint_instance
from tests.support.interactive import modern_meta, round_trip
from tests.support.mcp_http import final_message, modern_call
from tests.support.wire import validate_message

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("docs_page_blocks")]

PAGES = (ROOT / "docs" / "get-started.md", *sorted((ROOT / "docs" / "building").glob("*.md")))
BLOCKS = [block for page in PAGES for block in blocks(page)]
RUNNABLE = [block for block in BLOCKS if block.runner in {"module", "pytest", "commands", "json", "policy"}]
FEATURES_PACKAGE = "docs_page_features"
PACKAGE_JSON = json.loads((ROOT / "package.json").read_text())["devDependencies"]
# The page's local addresses (make dev's defaults), replaced by the endpoint's started here.
LOCAL_ADDRESS = re.compile(r"(?:localhost|127\.0\.0\.1):8000\b")
PLACEHOLDER = re.compile(r"<[a-z][a-z ]*>")
NEEDS_AN_ACCOUNT = {
    ("sts", "get-caller-identity"): "asks AWS which account the credentials belong to",
}
QUESTION_CALLS = {
    "elicitation/create": ("ctx.elicit(", "elicitation("),
    "sampling/createMessage": ("ctx.sample(", "sampling("),
    "roots/list": ("ctx.list_roots(", "roots("),
}
DEADLINE_S = 30


def snippet_base() -> Path:
    """pymdownx.snippets' base path, as mkdocs.yml names it."""
    match = re.search(r"base_path:\s*\[([^\]]+)\]", (ROOT / "mkdocs.yml").read_text())
    assert match, "mkdocs.yml names no snippets base_path"
    return ROOT / match[1].strip()


def test_every_block_is_run_checked_or_marked_illustrative() -> None:
    # Given every fenced block of the pages / Then each has a way to be run or checked, or a reason not to
    unknown = [f"{block.id} ({block.language or 'no language'})" for block in BLOCKS if not block.runner]
    assert not unknown, f"blocks with no runner: mark them (tests/support/doc_blocks.py): {unknown}"
    for block in BLOCKS:
        if block.runner == "illustrative":
            assert len(block.arguments.split()) >= 3, f"{block.id}: say why the block is not run"
        elif block.runner == "snippet":
            assert block.snippet is not None and (snippet_base() / block.snippet).is_file(), block.id
        else:
            assert block in RUNNABLE, f"{block.id}: unknown runner {block.runner!r}"
    assert len(RUNNABLE) >= 8  # the pages' blocks were found: a broken fence pattern finds none


# -- the pages' features modules ----------------------------------------------------------------


def module_blocks() -> list[Block]:
    return [block for block in BLOCKS if block.runner == "module"]


def module_name(block: Block) -> str:
    return block.arguments.split()[0]


@pytest.fixture(scope="module")
def features(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The pages' modules as one features package, each also importable as ``mcp_tools.NAME``
    (the name the starter app's own module would have, which the pages' tests import)."""
    root = tmp_path_factory.mktemp("docs-features")
    package = root / FEATURES_PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text('"""The documentation pages\' features modules."""\n')
    names = [module_name(block) for block in module_blocks()]
    assert len(names) == len(set(names)), f"two pages' modules share a name: {names}"
    for block in module_blocks():
        (package / f"{module_name(block)}.py").write_text(block.code)
    sys.path.insert(0, str(root))
    try:
        imported = importlib.import_module(FEATURES_PACKAGE)
        for name in names:
            sys.modules[f"mcp_tools.{name}"] = importlib.import_module(f"{FEATURES_PACKAGE}.{name}")
        yield imported
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n.startswith(FEATURES_PACKAGE)]:
            del sys.modules[name]
        for name in names:
            sys.modules.pop(f"mcp_tools.{name}", None)


# -- the endpoint the pages' commands and calls go to -------------------------------------------


@dataclass(frozen=True)
class DocsPlatform:
    instance: Instance
    key: str
    aws: AwsStack

    @property
    def url(self) -> str:
        return self.instance.url

    @property
    def address(self) -> str:
        return self.url.removeprefix("http://").removesuffix("/mcp")


@pytest.fixture(scope="module")
def platform(features: ModuleType) -> Iterator[DocsPlatform]:
    with fake_credentials(), aws_stack() as aws:
        sqs = aws.client("sqs")
        queue_url = sqs.create_queue(QueueName=f"tasks-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        settings = {"MCP_TASK_QUEUE_URL": queue_url}
        handler = build_handler(
            aws.settings(**settings),
            mcp_tools,
            features,
            dynamodb=aws.client("dynamodb"),
            kinesis=aws.client("kinesis"),
            sqs=sqs,
        )
        context = LambdaContext("task-worker", "arn:aws:lambda:us-east-1:000000000000:function:task-worker", 1024, 900)
        stop = threading.Event()
        worker = QueuePoller(
            "task-worker",
            aws.client("sqs"),
            queue_url,
            queue_arn,
            lambda event: handler(event, context),
            batch_size=1,
            region="us-east-1",
            stop=stop,
        )
        key = ApiKeyStore(aws.table, aws.client("dynamodb")).mint("reader")
        with endpoint_instance(aws, extra_tools=(features,), **settings) as instance:
            worker.start()
            try:
                yield DocsPlatform(instance, key, aws)
            finally:
                stop.set()
                worker.join(timeout=DEADLINE_S)
            validate_core_messages(instance)  # an invalid message raises


def validate_core_messages(instance: Instance) -> int:
    """Every message the endpoint sent, checked against the official SDK's models, but those of
    the tasks extension, which the models do not describe; how many were checked."""
    checked = 0
    for exchange in instance.recorder.exchanges:
        if (exchange.method or "").startswith("tasks/"):
            continue
        for message in exchange.messages():
            if message.get("result", {}).get("resultType") != "task":
                validate_message(exchange, message)
                checked += 1
    return checked


# -- answering what a tool asks, as a client would -----------------------------------------------


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """A client's answer to one input request, shaped as its method's result."""
    method, params = request["method"], request.get("params", {})
    if method == "elicitation/create":
        sample = {"string": "Ada", "boolean": True, "number": 1, "integer": 1}
        properties = params["requestedSchema"].get("properties", {})
        return {"action": "accept", "content": {name: sample[p["type"]] for name, p in properties.items()}}
    if method == "sampling/createMessage":
        reply = {"type": "text", "text": "Porto"}
        return {"role": "assistant", "content": reply, "model": "docs-test", "stopReason": "endTurn"}
    if method == "roots/list":
        return {"roots": [{"uri": "file:///home/ada/trips", "name": "trips"}]}
    raise AssertionError(f"no answer for {method}")


def questions_in(code: str) -> set[str]:
    """The question methods a module's code asks (so a test can tell they were all asked)."""
    return {method for method, calls in QUESTION_CALLS.items() if any(call in code for call in calls)}


ALL_CAPABILITIES: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}


def call_answering_every_question(platform: DocsPlatform, tool: str, arguments: dict[str, Any]) -> tuple[Any, set[str]]:
    """A 2026 tools/call, retried with the answers to each round's questions until it completes:
    the result, and the methods asked."""
    asked: set[str] = set()
    retry: dict[str, Any] = {}
    for request_id in range(1, 10):
        message = round_trip(platform.url, platform.key, request_id, tool, arguments, **retry)
        assert "result" in message, message
        result = message["result"]
        if result.get("resultType") != "input_required":
            return result, asked
        requests = result["inputRequests"]
        asked.update(request["method"] for request in requests.values())
        retry = {
            "inputResponses": {key: answer(request) for key, request in requests.items()},
            "requestState": result["requestState"],
        }
    raise AssertionError(f"{tool} still asking after 9 rounds")


def tasks_rpc(platform: DocsPlatform, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    capabilities = {**ALL_CAPABILITIES, "extensions": {EXTENSION_ID: {}}}
    message = final_message(
        modern_call(platform.url, platform.key, request_id, method, {**params, "_meta": modern_meta(capabilities)})
    )
    assert "result" in message, message
    return dict(message["result"])


def follow_task(platform: DocsPlatform, task_id: str) -> tuple[dict[str, Any], set[str]]:
    """tasks/get until the task ends, answering its questions with tasks/update: the last
    tasks/get, and the methods asked."""
    asked: set[str] = set()
    deadline = time.monotonic() + DEADLINE_S
    for request_id in range(100, 10_000):
        task = tasks_rpc(platform, request_id, "tasks/get", {"taskId": task_id})
        if task["status"] in ("completed", "failed", "cancelled"):
            return task, asked
        if task["status"] == "input_required":
            requests = task["inputRequests"]
            asked.update(request["method"] for request in requests.values())
            responses = {key: answer(request) for key, request in requests.items()}
            tasks_rpc(platform, request_id, "tasks/update", {"taskId": task_id, "inputResponses": responses})
        assert time.monotonic() < deadline, f"task {task_id} still {task['status']} after {DEADLINE_S} s"
        time.sleep(0.2)
    raise AssertionError("unreachable")


# -- shell commands ----------------------------------------------------------------------------


def check_make(command: Command) -> None:
    targets = make_targets()
    for target in command.argv[1:]:
        assert target in targets, f"make {target}: no such target in the Makefile"
    if command.comment.startswith("="):  # "make deploy  # = npx cdk deploy --all": the recipe says so
        claimed = command.comment[1:].strip().split(";")[0].strip()
        recipe = targets[command.argv[-1]]
        assert claimed in recipe, f"make {command.argv[-1]} runs {recipe}, not {claimed!r}"
        if claimed.startswith("npx cdk "):
            check_cdk(claimed.split()[1:])


def check_cdk(argv: list[str]) -> None:
    """``cdk SUBCOMMAND [--flags]``: the pinned CLI has the subcommand and every flag (its --help;
    nothing is synthesized or deployed)."""
    assert "aws-cdk" in PACKAGE_JSON, "package.json pins no aws-cdk"
    subcommand, flags = argv[1], [word.split("=")[0] for word in argv[2:] if word.startswith("--")]
    env = {**os.environ, "CDK_DISABLE_CLI_TELEMETRY": "true", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    shown = subprocess.run(
        [str(ROOT / "node_modules" / ".bin" / "cdk"), subcommand, "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    for flag in flags:
        assert re.search(rf"^\s+{re.escape(flag)}\b", shown.stdout, re.M), f"cdk {subcommand} has no {flag}"


def check_python_module(command: Command) -> None:
    module = command.argv[command.argv.index("-m") + 1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "platform" / "python"), str(ROOT)])}
    shown = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, f"python -m {module} --help: {shown.stderr}"


def localized(text: str, platform: DocsPlatform, values: dict[str, str]) -> str:
    """The command aimed at the endpoint started here, its placeholders filled in."""
    text = LOCAL_ADDRESS.sub(platform.address, text)
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    left = PLACEHOLDER.findall(text)
    assert not left, f"no value for {left} in {text!r}"
    return text


def run_inspector(command: Command, platform: DocsPlatform) -> None:
    package, _, version = command.argv[1].rpartition("@")
    assert PACKAGE_JSON.get(package) == version, f"{package}@{version} is not the version package.json pins"
    assert "--cli" in command.argv, "only the Inspector's CLI runs here (its web UI: tests/support/inspector.py)"
    argv = [localized(word, platform, {"<the printed key>": platform.key}) for word in command.argv]
    env = {**suite_environment(), "npm_config_offline": "true"}  # the pinned package, from node_modules
    shown = subprocess.run(["npx", *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    output = json.loads(shown.stdout)
    method = argv[argv.index("--method") + 1]
    if method == "tools/list":
        assert {tool["name"] for tool in output["tools"]} >= {"echo", "open_session"}, output
    else:
        assert output.get("content") and not output.get("isError"), output


def run_curl(command: Command, block: Block, platform: DocsPlatform) -> None:
    handle = round_trip(platform.url, platform.key, 1, "open_session", {})["result"]["structuredContent"]["session"]
    text = localized(command.text, platform, {"<handle from open_session>": handle})
    shown = subprocess.run(
        ["bash", "-c", text], env={**os.environ, "KEY": platform.key}, capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    message = json.loads(shown.stdout)
    assert "result" in message, message
    result = message["result"]
    # The output the block shows in its comment (`# {"result":{"resultType":"task",...}}`): its
    # literal values are what came back.
    shown_output = re.search(r"^# (\{.*)$", block.code, re.M)
    if shown_output:
        for name, value in re.findall(r'"(\w+)":"([^".]+)"', shown_output[1]):
            assert result.get(name) == value, f"{name}: {result.get(name)!r}, the page shows {value!r}"
    if result.get("resultType") == "task":  # "then tasks/get ... until completed"
        task, _ = follow_task(platform, result["taskId"])
        assert task["status"] == "completed" and not task["result"].get("isError"), task


def run_command(command: Command, block: Block, request: pytest.FixtureRequest) -> None:
    program = command.argv[0]
    if program == "make":
        check_make(command)
    elif program == "npx" and command.argv[1] == "cdk":
        check_cdk(command.argv[1:])
    elif program == "npx" and command.argv[1].startswith("@modelcontextprotocol/inspector@"):
        run_inspector(command, request.getfixturevalue("platform"))
    elif program == "curl":
        run_curl(command, block, request.getfixturevalue("platform"))
    elif program == "aws":
        reason = NEEDS_AN_ACCOUNT.get(tuple(command.argv[1:3]))  # type: ignore[arg-type]
        assert reason, f"{' '.join(command.argv)}: needs AWS; name it in NEEDS_AN_ACCOUNT with why it is not run"
    elif Path(program).name.startswith("python") and "-m" in command.argv:
        check_python_module(command)
    else:
        raise AssertionError(f"{block.id}: no check for {program!r} (add one here, or mark the block illustrative)")


# -- each block ----------------------------------------------------------------------------------


def run_module(block: Block, request: pytest.FixtureRequest) -> None:
    features: ModuleType = request.getfixturevalue("features")
    name, *action = block.arguments.split(maxsplit=2)
    module = getattr(features, name)
    defined = [value for value in vars(module).values() if spec_of(value) is not None]
    assert defined, f"{block.id}: the module defines no tool, resource or prompt"
    if not action:
        return  # its page's test runs it (a ``pytest`` block)
    platform: DocsPlatform = request.getfixturevalue("platform")
    arguments = json.loads(action[1]) if len(action) > 1 else {}
    tool = spec_of(defined[0]).name  # type: ignore[union-attr]
    if action[0] == "call":
        result, asked = call_answering_every_question(platform, tool, arguments)
    elif action[0] == "task":
        created = tasks_rpc(platform, 1, "tools/call", {"name": tool, "arguments": arguments})
        assert created.get("resultType") == "task", created
        task, asked = follow_task(platform, created["taskId"])
        assert task["status"] == "completed", task
        result = task["result"]
    else:
        raise AssertionError(f"{block.id}: a module is served, then `call`ed or run as a `task`, not {action[0]!r}")
    assert not result.get("isError"), result
    assert asked >= questions_in(block.code), f"asked {asked}, the code asks {questions_in(block.code)}"


def run_pytest_block(block: Block, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("features")  # the page's modules, importable as the test imports them
    # The pages' policy files, where a test reading MCP_POLICIES_DIR (as make dev does) finds them.
    monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("MCP_POLICIES_DIR", str(request.getfixturevalue("policies")))
    namespace: dict[str, Any] = {}
    exec(compile(block.code, block.id, "exec"), namespace)
    tests = [value for name, value in namespace.items() if name.startswith("test_") and callable(value)]
    assert tests, f"{block.id}: no test function"
    for test in tests:
        outcome = test()
        if asyncio.iscoroutine(outcome):
            asyncio.run(outcome)


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pages' ``policy`` blocks as the policy files they name (a file's blocks in page order)."""
    folder = tmp_path_factory.mktemp("docs-policies")
    for block in (block for block in BLOCKS if block.runner == "policy"):
        with (folder / block.arguments.split()[0]).open("a") as file:
            file.write(block.code + "\n")
    return folder


def run_policy_block(block: Block, request: pytest.FixtureRequest) -> None:
    """The block's file, with the pages' others, validates against the pages' features (the
    schema generated from their catalog, as the endpoint's start and synth check it)."""
    from mcp_platform.testing import PolicyCheck

    assert block.arguments.endswith(".cedar"), f"{block.id}: a policy block names its file (NAME.cedar)"
    folder: Path = request.getfixturevalue("policies")
    PolicyCheck(request.getfixturevalue("features"), policies=folder)


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda block: block.id)
def test_the_block_runs_as_shown(block: Block, request: pytest.FixtureRequest) -> None:
    if block.runner == "module":
        run_module(block, request)
    elif block.runner == "pytest":
        run_pytest_block(block, request)
    elif block.runner == "json":
        json.loads(block.code)
    elif block.runner == "policy":
        run_policy_block(block, request)
    else:
        found = commands(block.code)
        assert found, f"{block.id}: a shell block with no command"
        for command in found:
            run_command(command, block, request)

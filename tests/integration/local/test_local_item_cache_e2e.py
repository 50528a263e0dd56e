"""X6 across real processes: `make dev` and an attached `make dev-second` read and write through
one DAX item cache, the emulator's (local/dax_cluster.py), as every function does through one
cluster on AWS. With a cache per process, a note appended through the second instance stayed
invisible to an eventually consistent read_notes through the first for the item TTL (5 minutes)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from tests.support.interactive import modern_meta
from tests.support.local_platform import LocalPlatform, local_platform
from tests.support.mcp_http import final_message, modern_call

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_item_cache")]


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalPlatform, LocalPlatform]]:
    with ExitStack() as stack:
        first = stack.enter_context(local_platform(tmp_path_factory.mktemp("first")))
        attach = {"LOCAL_AWS_PORT": first.aws_url.rsplit(":", 1)[1]}
        second = stack.enter_context(local_platform(tmp_path_factory.mktemp("second"), env=attach, args=["--attach"]))
        yield first, second


def tool(instance: LocalPlatform, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": modern_meta()}
    answer = final_message(modern_call(instance.mcp_url, instance.api_key, 1, "tools/call", params))
    assert "result" in answer and not answer["result"].get("isError"), answer
    result: dict[str, Any] = answer["result"]["structuredContent"]
    return result


def test_x6_a_note_appended_through_the_second_process_is_read_through_the_first(
    two: tuple[LocalPlatform, LocalPlatform],
) -> None:
    first, second = two
    # Given a session whose (empty) notes the first instance has read eventually consistently
    handle = tool(first, "open_session", {})["session"]
    assert tool(first, "read_notes", {"session": handle})["notes"] == []
    # When a note is appended through the second instance
    tool(second, "append_note", {"session": handle, "text": "from the second"})
    # Then the first instance's next eventually consistent read returns it, at once
    notes = tool(first, "read_notes", {"session": handle})["notes"]
    assert [note["text"] for note in notes] == ["from the second"], notes

"""The features the platform's own fixture package (tests/support/platform_tools) serves: one fixed
list for every test that checks it. The starter app's features are not listed anywhere: tests/app
checks that its folder is discovered whole."""

from __future__ import annotations

EXPECTED_TOOLS = [
    "append_note",
    "countdown",
    "echo",
    "increment_counter",
    "open_session",
    "read_notes",
    "recent_tool_events",
    "session_audit",
    "session_info",
    "session_report",
]
EXPECTED_RESOURCES: list[str] = []
EXPECTED_TEMPLATES = {"session_notes": "session://{session}/notes", "session_summary": "session://{session}"}
EXPECTED_PROMPTS = ["summarize_session"]

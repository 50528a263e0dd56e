"""The features the endpoint's own folder serves: one fixed list for every test that checks it."""

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
EXPECTED_RESOURCES = ["ui://counter/view.html"]
EXPECTED_TEMPLATES = {"session_notes": "session://{session}/notes", "session_summary": "session://{session}"}
EXPECTED_PROMPTS = ["summarize_session"]

"""The endpoint's tools, resources and prompts: one module per feature (or per small family),
discovered at start-up.

Add a tool by adding a module here with a function decorated with ``@tool`` (``from mcp_platform
import ToolContext, tool``; README "Adding a tool"), and its test (``mcp_platform.testing.
ToolHarness``, as in ``tests/app/test_starter_app.py``, the app's own tests, which also prove every
module is discovered). Third-party packages the modules import go in ``requirements.txt`` here
(``make setup`` installs them; ``make lock`` locks them into the layer).

The platform's own tests never use this folder (they serve ``tests/support/platform_tools``): it
can be replaced or emptied without breaking them.
"""

"""A dashboard view (CSP origins, a permission, a border) and the two tools that name it."""

from __future__ import annotations

from mcp_platform import ResourceCsp, ResourcePermissions, tool, ui_resource

VIEW_URI = "ui://test-dashboard/app.html"
HTML = "<!doctype html><title>Dashboard</title><output id='total'></output>"


@tool(ui=VIEW_URI)
def show_totals(days: int = 7) -> dict[str, int]:
    """Totals of the last days (the text for the model, the structure for the view)."""
    return {"days": days, "total": 3 * days}


@tool(ui=VIEW_URI, visibility=["app"])
def refresh_totals() -> str:
    """Refresh the dashboard (its view calls it; hosts hide it from the model)."""
    return "refreshed"


@ui_resource(
    VIEW_URI,
    title="Dashboard",
    csp=ResourceCsp(connect_domains=["https://api.example.com"]),
    permissions=ResourcePermissions(clipboard_write=True),
    prefers_border=False,
)
def dashboard_view() -> str:
    """The dashboard page."""
    return HTML

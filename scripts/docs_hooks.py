"""MkDocs hooks: pages that are rendered from the code, so they cannot drift from it.

``<!-- context-keys -->`` becomes the table of every CDK context key, its default and its meaning
(stacks/config.py DEFAULTS, stacks/context_docs.py). ``<!-- bench:aws-calls -->`` becomes the
AWS round trips of each operation, counted by running ``make bench``'s deterministic AWS-calls
suite (bench/bench_aws_calls.py) while the site builds; ``<!-- bench:cost -->`` the cost per
million of the main operations from the same run, with the prices and assumptions it used
(bench/cost.py); ``<!-- bench:governance -->`` what rate limits and quotas add to them;
``<!-- bench:edge-cost -->`` what each edge adds, per million requests and per month (prices only);
``<!-- bench:idle-cost -->`` what each configuration costs a month idle, walked from its synthesized
templates (bench/idle_cost.py), and ``<!-- bench:minimal-limits -->`` where the minimal profile's one
shard runs out at the event size the AWS-calls suite measures.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# MkDocs restores sys.path once a hook module is loaded, so the paths are added again for each use.
IMPORT_ROOTS = [str(ROOT / p) for p in (".", "layers/platform/python", "functions/endpoint", "bench")]


@contextlib.contextmanager
def project_imports() -> Iterator[None]:
    saved = list(sys.path)
    sys.path[:0] = IMPORT_ROOTS
    try:
        yield
    finally:
        sys.path[:] = saved


CONTEXT_KEYS_MARKER = "<!-- context-keys -->"
AWS_CALLS_MARKER = "<!-- bench:aws-calls -->"
COST_MARKER = "<!-- bench:cost -->"
GOVERNANCE_MARKER = "<!-- bench:governance -->"
EDGE_COST_MARKER = "<!-- bench:edge-cost -->"
IDLE_COST_MARKER = "<!-- bench:idle-cost -->"
MINIMAL_LIMITS_MARKER = "<!-- bench:minimal-limits -->"


def on_page_markdown(markdown: str, **_: Any) -> str:
    with project_imports():
        if CONTEXT_KEYS_MARKER in markdown:
            from stacks.context_docs import markdown_table

            markdown = markdown.replace(CONTEXT_KEYS_MARKER, markdown_table())
        if AWS_CALLS_MARKER in markdown:
            markdown = markdown.replace(AWS_CALLS_MARKER, aws_calls_table())
        if COST_MARKER in markdown:
            markdown = markdown.replace(COST_MARKER, cost_tables())
        if GOVERNANCE_MARKER in markdown:
            markdown = markdown.replace(GOVERNANCE_MARKER, governance_table())
        if EDGE_COST_MARKER in markdown:
            markdown = markdown.replace(EDGE_COST_MARKER, edge_cost_table())
        if IDLE_COST_MARKER in markdown:
            markdown = markdown.replace(IDLE_COST_MARKER, idle_cost_table())
        if MINIMAL_LIMITS_MARKER in markdown:
            markdown = markdown.replace(MINIMAL_LIMITS_MARKER, minimal_limits_table())
    return markdown


def aws_calls_table() -> str:
    import bench_aws_calls  # its run() starts a local moto server and serves the endpoint in-process

    rows = ["| operation | AWS calls | which | what happens |", "|---|---|---|---|"]
    for row in bench_aws_calls.run():
        if row["unit"] == "USD" or str(row["metric"]).startswith("governance budget: "):
            continue  # the cost rows and governance's comparisons: their own tables
        which, _, note = str(row["note"]).partition("; ")
        label = str(row["metric"]).removeprefix("AWS calls: ")
        rows.append(f"| {label} | {row['ours']} | {which.replace(', ', '<br>')} | {note} |")
    return "\n".join(rows)


def cost_tables() -> str:
    import bench_aws_calls  # measured once per build: the AWS-calls table comes from the same run
    import cost

    header, *lines = bench_aws_calls.cost_table()
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table += ["| " + " | ".join(line) + " |" for line in lines]
    prices = ["| price | USD | source |", "|---|---|---|"]
    prices += [f"| {name} | {price} | <{source}> |" for name, price, source in cost.price_rows()]
    return "\n".join([*table, "", cost.assumptions(bench_aws_calls.dax_hit_ratio()), "", *prices])


def edge_cost_table() -> str:
    import cost  # prices only: no run needed

    header, *lines = cost.edge_table()
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table += ["| " + " | ".join(line) + " |" for line in lines]
    return "\n".join([*table, "", cost.edge_assumptions()])


def _markdown(lines: list[list[str]]) -> list[str]:
    header, *rows = lines
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def idle_cost_table() -> str:
    import cost
    import idle_cost  # synthesizes each configuration offline (once per build)

    missing = idle_cost.unpriced()
    if missing:  # a resource type with no price and not known free: the table would understate
        raise ValueError(f"resource types neither priced nor known free in bench/cost.py: {missing}")
    return "\n".join([*_markdown(idle_cost.idle_table()), "", cost.idle_assumptions()])


def minimal_limits_table() -> str:
    import bench_aws_calls  # the measured event size: the same run as the cost table
    import idle_cost

    event_bytes, events = bench_aws_calls.event_size()
    intro = f"At {event_bytes} bytes per tool-call event (the largest measured), {events} event(s) per call:"
    return "\n".join(
        [intro, "", *_markdown(idle_cost.minimal_limits(event_bytes, events)), "", idle_cost.limits_notes()]
    )


def governance_table() -> str:
    import bench_aws_calls  # the same run as the other tables

    header, *lines = bench_aws_calls.governance_table()
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(table + ["| " + " | ".join(line) + " |" for line in lines])

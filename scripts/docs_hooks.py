"""MkDocs hooks: pages that are rendered from the code, so they cannot drift from it.

``<!-- context-keys -->`` becomes the table of every CDK context key, its default and its meaning
(stacks/config.py DEFAULTS, stacks/context_docs.py). ``<!-- bench:aws-calls -->`` becomes the
AWS round trips of each operation, counted by running ``make bench``'s deterministic AWS-calls
suite (bench/bench_aws_calls.py) while the site builds; ``<!-- bench:cost -->`` the cost per
million of the main operations from the same run, with the prices and assumptions it used
(bench/cost.py); ``<!-- bench:governance -->`` what rate limits and quotas add to them;
``<!-- bench:edge-cost -->`` what each edge adds, per million requests and per month (prices only).
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


def governance_table() -> str:
    import bench_aws_calls  # the same run as the other tables

    header, *lines = bench_aws_calls.governance_table()
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(table + ["| " + " | ".join(line) + " |" for line in lines])

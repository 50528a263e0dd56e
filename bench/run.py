"""``make bench``: every benchmark, one table; each of our figures next to its like-for-like peer
(measured in the same run), the ratio ours/peer, and a note saying what work both do.

``python bench/run.py [suite ...]`` runs some suites only (endpoint, functions, loopback, aws,
producer, audit, parallel). Sizes can be lowered with the BENCH_* variables the suites read.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT / "layers/platform/python", ROOT / "functions/endpoint", ROOT, ROOT / "bench"):
    sys.path.insert(0, str(extra))

import bench_audit  # noqa: E402
import bench_aws_calls  # noqa: E402
import bench_endpoint  # noqa: E402
import bench_functions  # noqa: E402
import bench_loopback  # noqa: E402
import bench_parallel  # noqa: E402
import bench_producer  # noqa: E402

SUITES = {
    "endpoint": bench_endpoint,
    "functions": bench_functions,
    "loopback": bench_loopback,
    "aws": bench_aws_calls,
    "producer": bench_producer,
    "audit": bench_audit,
    "parallel": bench_parallel,
}
COLUMNS = ("suite", "metric", "ours", "peer", "ratio", "unit")


def main(selected: list[str]) -> int:
    unknown = [name for name in selected if name not in SUITES]
    if unknown:
        print(f"unknown suite(s): {', '.join(unknown)}; choose from {', '.join(SUITES)}", file=sys.stderr)
        return 2
    rows = []
    for name, module in SUITES.items():
        if selected and name not in selected:
            continue
        print(f"running {name} ...", file=sys.stderr, flush=True)
        rows += [{"suite": name, **row} for row in module.run()]
    widths = {column: max(len(column), *(len(str(row.get(column, ""))) for row in rows)) for column in COLUMNS}
    header = "  ".join(f"{column:<{widths[column]}}" for column in COLUMNS) + "  note"
    print(header)
    print("-" * len(header))
    for row in rows:
        cells = []
        for column in COLUMNS:
            value = str(row.get(column, ""))
            numeric = column in ("ours", "peer", "ratio")
            cells.append(f"{value:>{widths[column]}}" if numeric else f"{value:<{widths[column]}}")
        print("  ".join(cells) + f"  {row.get('note', '')}")
    for name, module in SUITES.items():
        # A suite may add tables of its own under the common one (aws: cost per million calls).
        if (not selected or name in selected) and hasattr(module, "extra_tables"):
            print(module.extra_tables())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

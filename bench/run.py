"""``make bench``: every benchmark, one table, ratios side by side in one run."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT / "layers/platform/python", ROOT / "functions/endpoint", ROOT, ROOT / "bench"):
    sys.path.insert(0, str(extra))

import bench_audit  # noqa: E402
import bench_endpoint  # noqa: E402
import bench_parallel  # noqa: E402
import bench_producer  # noqa: E402

SUITES = {"endpoint": bench_endpoint, "parallel": bench_parallel, "producer": bench_producer, "audit": bench_audit}


def main(selected: list[str]) -> int:
    rows = []
    for name, module in SUITES.items():
        if selected and name not in selected:
            continue
        print(f"running {name} ...", file=sys.stderr, flush=True)
        rows += [{"suite": name, **row} for row in module.run()]
    width = max(len(str(row["metric"])) for row in rows)
    print(f"{'suite':<9} {'metric':<{width}} {'value':>10} unit   note")
    for row in rows:
        print(f"{row['suite']:<9} {row['metric']:<{width}} {row['value']!s:>10} {row['unit']:<6} {row.get('note', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

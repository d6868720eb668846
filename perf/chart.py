#!/usr/bin/env python3
"""Draws docs/images/perf-ratios.svg from README.md's Performance table, so the chart can only show what the table
(and through it a results file) says: one bar per row, the "ours better by" cell on a log scale. A range is drawn at
its low end and "median N" at N, so the chart never claims more than the row.

    python3 perf/chart.py            # from the repository root; standard library only
"""

import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = "<!-- perf-table:"


def rows(readme):
    """(label, ratio) for each row of the table after MARKER."""
    lines = readme.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(MARKER))
    out = []
    for line in lines[start + 3:]:  # the marker, the head and the rule
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        label, better = cells[0], cells[3]
        m = re.search(r"median ([0-9.]+)", better) or re.search(r"([0-9][0-9,]*\.?[0-9]*)", better)
        if not m:
            sys.exit(f"no ratio in row: {line}")
        out.append((label.replace("`", ""), float(m.group(1).replace(",", ""))))
    return out


def svg(data):
    bar_h, gap, left, right, top = 18, 6, 430, 80, 40
    width = 900
    plot_w = width - left - right
    height = top + len(data) * (bar_h + gap) + 40
    top_decade = math.ceil(math.log10(max(r for _, r in data)))
    x = lambda v: left + plot_w * math.log10(max(v, 1.0)) / top_decade
    esc = lambda s: s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    o = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="10" y="20" font-size="14" font-weight="bold">'
        "namesrv vs Java 5.5.0: how many times better (log scale; README.md, Performance)</text>",
    ]
    for d in range(top_decade + 1):
        gx = x(10**d)
        o.append(f'<line x1="{gx:.1f}" y1="{top - 6}" x2="{gx:.1f}" y2="{height - 30}" stroke="#ddd"/>')
        o.append(f'<text x="{gx:.1f}" y="{height - 14}" text-anchor="middle" fill="#555">{10**d}×</text>')
    for i, (label, ratio) in enumerate(data):
        y = top + i * (bar_h + gap)
        short = label if len(label) <= 68 else label[:66] + "…"
        o.append(f'<text x="{left - 8}" y="{y + 13}" text-anchor="end">{esc(short)}</text>')
        o.append(f'<rect x="{left}" y="{y}" width="{x(ratio) - left:.1f}" height="{bar_h}" fill="#3b7dd8"/>')
        o.append(f'<text x="{x(ratio) + 4:.1f}" y="{y + 13}">{ratio:g}×</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


def main():
    data = rows((ROOT / "README.md").read_text(encoding="utf-8"))
    out = ROOT / "docs" / "images" / "perf-ratios.svg"
    out.write_text(svg(data), encoding="utf-8")
    print(f"{out.relative_to(ROOT)}: {len(data)} bars")


if __name__ == "__main__":
    main()

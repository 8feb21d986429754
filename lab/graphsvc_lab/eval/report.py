"""Tables for stdout and Markdown, the report file, and the PNG plots.

A :class:`Table` is rendered twice from the same cells: aligned plain text for the terminal and a
Markdown table for ``report.md``. Plots need matplotlib (the ``eval`` extra); without it the
report says so and the tables are still written.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Cell = str | float | int | None


def fmt(value: Cell, places: int = 3) -> str:
    """A cell as text: floats to ``places`` decimals, nan and None as ``n/a``."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        if math.isinf(value):
            return "inf"
        return f"{value:.{places}f}"
    return value


@dataclass
class Table:
    """A titled table with a note under it."""

    title: str
    header: Sequence[str]
    rows: list[Sequence[Cell]] = field(default_factory=list)
    note: str = ""
    key: str = ""  # a stable name for figures.json (the title carries counts)

    def cells(self) -> list[list[str]]:
        return [list(self.header)] + [[fmt(c) for c in row] for row in self.rows]

    def text(self) -> str:
        """Aligned plain text: first column left, the others right."""
        cells = self.cells()
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.header))]
        lines = [self.title, ""]
        for n, row in enumerate(cells):
            parts = [row[0].ljust(widths[0])] + [
                c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
            ]
            lines.append("  ".join(parts).rstrip())
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines)

    def markdown(self) -> str:
        cells = self.cells()
        lines = [f"### {self.title}", ""]
        lines.append("| " + " | ".join(cells[0]) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(self.header) - 1)) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in cells[1:]]
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines)


@dataclass
class Curve:
    """One line of a plot."""

    label: str
    xs: Sequence[float]
    ys: Sequence[float]
    dashed: bool = False
    color: int | None = None


@dataclass
class Plot:
    """A line plot written to ``name`` (a PNG file in the output folder)."""

    name: str
    title: str
    xlabel: str
    ylabel: str
    curves: list[Curve]
    diagonal: bool = False


@dataclass
class Report:
    """What one evaluation run produced: a preamble, tables, plots and machine-readable figures."""

    dataset: str
    preamble: list[str]
    tables: list[Table]
    plots: list[Plot]
    figures: dict[str, Any]
    timings: list[Table] = field(default_factory=list)
    environment: list[str] = field(default_factory=list)

    def text(self) -> str:
        blocks = ["\n".join(self.preamble + self.environment)]
        blocks += [t.text() for t in self.tables + self.timings]
        return "\n\n".join(blocks)


def write_plots(plots: Sequence[Plot], out: Path) -> list[str]:
    """Write the PNGs; returns the file names written (none without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    for plot in plots:
        fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
        for curve in plot.curves:
            ax.plot(
                list(curve.xs),
                list(curve.ys),
                marker="." if len(curve.xs) < 30 else None,
                linestyle="--" if curve.dashed else "-",
                color=None if curve.color is None else f"C{curve.color}",
                label=curve.label,
            )
        if plot.diagonal:
            ax.plot([0, 1], [0, 1], linestyle=":", color="grey", label="chance")
        ax.set_title(plot.title)
        ax.set_xlabel(plot.xlabel)
        ax.set_ylabel(plot.ylabel)
        ax.set_ylim(0.0, 1.0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize="small")
        fig.tight_layout()
        # A fixed creation date (no timestamp) so the same run writes the same bytes.
        fig.savefig(out / plot.name, metadata={"Software": None})
        plt.close(fig)
        written.append(plot.name)
    return written


def write_report(report: Report, out: Path) -> Path:
    """Write ``report.md``, ``figures.json`` (deterministic), ``speed.json`` and the plots into
    ``out``; returns the report path."""
    out.mkdir(parents=True, exist_ok=True)
    pictures = write_plots(report.plots, out)
    lines = [f"# graphsvc evaluation: {report.dataset}", "", *report.preamble, ""]
    for table in report.tables:
        lines += [table.markdown(), ""]
    if pictures:
        lines += ["## Plots", ""]
        lines += [f"![{name}]({name})" for name in pictures]
        lines.append("")
    elif report.plots:
        lines += ["(plots skipped: install matplotlib, `pip install -e lab`)", ""]
    if report.timings or report.environment:
        lines += ["## This run (varies run to run; everything above is deterministic)", ""]
        lines += [*report.environment, ""]
        for table in report.timings:
            lines += [table.markdown(), ""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    (out / "figures.json").write_text(
        json.dumps(_finite(report.figures), indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    speed = {
        table.key or table.title: {
            str(row[0]): dict(zip(table.header[1:], row[1:], strict=True)) for row in table.rows
        }
        for table in report.timings
    }
    (out / "speed.json").write_text(
        json.dumps(_finite(speed), indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return path


def _finite(value: Any) -> Any:
    """JSON has no nan or inf: they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


__all__ = ["Curve", "Plot", "Report", "Table", "fmt", "write_plots", "write_report"]

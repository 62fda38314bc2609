"""Render rows of data as aligned plain-text or Markdown tables."""

import csv
import io
from typing import Any, Iterable, List, Optional, Sequence

ELLIPSIS = "…"
DEFAULT_MAX_WIDTH = 40


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _truncate(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + ELLIPSIS


def render_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    maxColWidth: int = DEFAULT_MAX_WIDTH,
    alignRight: Optional[Iterable[int]] = None,
    markdown: bool = False,
) -> str:
    # Convert every cell to text first so that widths can be measured.
    textRows = [[_cell_text(v) for v in row] for row in rows]
    colCount = len(headers)
    # Rows shorter than the header are padded with empty cells.
    for rowCells in textRows:
        if len(rowCells) > colCount:
            raise ValueError(f"row has {len(rowCells)} cells, expected {colCount}")
        rowCells.extend([""] * (colCount - len(rowCells)))
    # The width of a column is its widest cell, capped at maxColWidth.
    colWidths = [min(len(h), maxColWidth) for h in headers]
    for rowCells in textRows:
        for colIdx, cellText in enumerate(rowCells):
            colWidths[colIdx] = min(max(colWidths[colIdx], len(cellText)), maxColWidth)
    rightCols = set(alignRight or ())

    def formatLine(cells: Sequence[str]) -> str:
        # Truncate or pad each cell, then join them with the column separator.
        paddedCells = []
        for colIdx, cellText in enumerate(cells):
            cellText = _truncate(cellText, colWidths[colIdx])
            if colIdx in rightCols:
                paddedCells.append(cellText.rjust(colWidths[colIdx]))
            else:
                paddedCells.append(cellText.ljust(colWidths[colIdx]))
        if markdown:
            return "| " + " | ".join(paddedCells) + " |"
        return "  ".join(paddedCells).rstrip()

    outLines = [formatLine(headers)]
    # Markdown needs a separator row; right-aligned columns end with a colon.
    if markdown:
        sepCells = []
        for colIdx, colWidth in enumerate(colWidths):
            dashes = "-" * max(colWidth, 3)
            sepCells.append(dashes[:-1] + ":" if colIdx in rightCols else dashes)
        outLines.append("| " + " | ".join(sepCells) + " |")
    else:
        outLines.append("  ".join("-" * w for w in colWidths))
    for rowCells in textRows:
        outLines.append(formatLine(rowCells))
    return "\n".join(outLines)


def numeric_columns(rows: List[Sequence[Any]]) -> List[int]:
    """Indexes of columns whose non-empty cells are all numbers."""
    if not rows:
        return []
    width = max(len(row) for row in rows)
    result = []
    for idx in range(width):
        values = [row[idx] for row in rows if idx < len(row) and row[idx] is not None]
        if values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            result.append(idx)
    return result


def csv_preview(text: str, limit: int = 20) -> str:
    """Show the first `limit` rows of a CSV document as a Markdown table."""
    reader = csv.reader(io.StringIO(text))
    headers = next(reader, [])
    rows: List[Sequence[Any]] = []
    for row in reader:
        if len(rows) >= limit:
            break
        rows.append(row)
    return render_table(headers, rows, 30, None, markdown=True)

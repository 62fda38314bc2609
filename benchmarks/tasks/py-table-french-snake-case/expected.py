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
    max_col_width: int = DEFAULT_MAX_WIDTH,
    align_right: Optional[Iterable[int]] = None,
    markdown: bool = False,
) -> str:
    # Convertir d'abord chaque cellule en texte pour pouvoir mesurer les largeurs.
    text_rows = [[_cell_text(v) for v in row] for row in rows]
    col_count = len(headers)
    # Les lignes plus courtes que l'en-tête sont complétées par des cellules vides.
    for row_cells in text_rows:
        if len(row_cells) > col_count:
            raise ValueError(f"row has {len(row_cells)} cells, expected {col_count}")
        row_cells.extend([""] * (col_count - len(row_cells)))
    # La largeur d'une colonne est celle de sa plus large cellule, plafonnée à max_col_width.
    col_widths = [min(len(h), max_col_width) for h in headers]
    for row_cells in text_rows:
        for col_idx, cell_text in enumerate(row_cells):
            col_widths[col_idx] = min(max(col_widths[col_idx], len(cell_text)), max_col_width)
    right_cols = set(align_right or ())

    def format_line(cells: Sequence[str]) -> str:
        # Tronquer ou compléter chaque cellule, puis les joindre avec le séparateur de colonnes.
        padded_cells = []
        for col_idx, cell_text in enumerate(cells):
            cell_text = _truncate(cell_text, col_widths[col_idx])
            if col_idx in right_cols:
                padded_cells.append(cell_text.rjust(col_widths[col_idx]))
            else:
                padded_cells.append(cell_text.ljust(col_widths[col_idx]))
        if markdown:
            return "| " + " | ".join(padded_cells) + " |"
        return "  ".join(padded_cells).rstrip()

    out_lines = [format_line(headers)]
    # Markdown exige une ligne de séparation ; les colonnes alignées à droite finissent par deux-points.
    if markdown:
        sep_cells = []
        for col_idx, col_width in enumerate(col_widths):
            dashes = "-" * max(col_width, 3)
            sep_cells.append(dashes[:-1] + ":" if col_idx in right_cols else dashes)
        out_lines.append("| " + " | ".join(sep_cells) + " |")
    else:
        out_lines.append("  ".join("-" * w for w in col_widths))
    for row_cells in text_rows:
        out_lines.append(format_line(row_cells))
    return "\n".join(out_lines)


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

"""Import orders from a CSV export into the local SQLite database."""

from __future__ import annotations

import csv
import logging
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Iterable, List, Optional

logger = logging.getLogger(__name__)

REQUIRED_COLUMNS = ("order_id", "customer_email", "placed_at", "total")
DATE_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%d/%m/%Y %H:%M")


@dataclass
class Order:
    order_id: str
    customer_email: str
    placed_at: datetime
    total: Decimal
    coupon: Optional[str] = None


@dataclass
class ImportResult:
    inserted: int = 0
    skipped: int = 0
    duplicates: int = 0
    errors: List[str] = field(default_factory=list)


def parse_timestamp(value: str) -> datetime:
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(value.strip(), fmt)
        except ValueError:
            continue
    raise ValueError(f"unrecognised timestamp: {value!r}")


def parse_row(row: dict) -> Order:
    missing = [col for col in REQUIRED_COLUMNS if not row.get(col)]
    if missing:
        raise ValueError(f"missing columns: {', '.join(missing)}")
    try:
        total = Decimal(row["total"].replace(",", ""))
    except InvalidOperation as exc:
        raise ValueError(f"bad total: {row['total']!r}") from exc
    if total < 0:
        raise ValueError("total must not be negative")
    email = row["customer_email"].strip().lower()
    if "@" not in email:
        raise ValueError(f"bad email: {email!r}")
    return Order(
        order_id=row["order_id"].strip(),
        customer_email=email,
        placed_at=parse_timestamp(row["placed_at"]),
        total=total,
        coupon=(row.get("coupon") or "").strip() or None,
    )


def ensure_schema(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS orders (
            order_id TEXT PRIMARY KEY,
            customer_email TEXT NOT NULL,
            placed_at TEXT NOT NULL,
            total TEXT NOT NULL,
            coupon TEXT
        )
        """
    )


def import_orders(conn: sqlite3.Connection, path: Path, dry_run: bool = False) -> ImportResult:
    """Insert every valid row of the CSV file at `path`, collecting per-line errors."""
    result = ImportResult()
    ensure_schema(conn)
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        for line_no, row in enumerate(reader, start=2):
            try:
                order = parse_row(row)
            except ValueError as exc:
                result.skipped += 1
                result.errors.append(f"line {line_no}: {exc}")
                continue
            if dry_run:
                result.inserted += 1
                continue
            try:
                conn.execute(
                    "INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
                    (
                        order.order_id,
                        order.customer_email,
                        order.placed_at.isoformat(),
                        str(order.total),
                        order.coupon,
                    ),
                )
            except sqlite3.IntegrityError:
                result.duplicates += 1
                continue
            result.inserted += 1
    if not dry_run:
        conn.commit()
    return result


def summarize(results: Iterable[ImportResult]) -> str:
    inserted = skipped = duplicates = 0
    for r in results:
        inserted += r.inserted
        skipped += r.skipped
        duplicates += r.duplicates
    return f"{inserted} inserted, {skipped} skipped, {duplicates} duplicates"


def main(argv: Optional[List[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("database", type=Path)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    conn = sqlite3.connect(args.database)
    try:
        results = [import_orders(conn, f, dry_run=args.dry_run) for f in args.files]
    finally:
        conn.close()
    print(summarize(results))
    return 1 if any(r.errors for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Monthly account statements as plain text, for e-mail and for the printer."""

from __future__ import annotations

import textwrap
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

CENT = Decimal("0.01")
SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£", "CHF": "CHF "}


@dataclass(frozen=True)
class Account:
    number: str
    holder: str
    address: tuple[str, ...]
    opened: date
    overdraft_limit: Decimal
    interest_rate: Decimal  # yearly, e.g. Decimal("0.015")


@dataclass(frozen=True)
class Transaction:
    booked: date
    description: str
    amount: Decimal  # negative: money out
    category: str = "other"
    counterparty: str = ""
    fee: bool = False


def format_money(amount: Decimal, currency: str = "EUR") -> str:
    """`€1,234.50`, `-€12.00`: the sign before the symbol, two decimals, thousands grouped."""
    rounded = amount.quantize(CENT, rounding=ROUND_HALF_EVEN)
    sign = "-" if rounded < 0 else ""
    symbol = SYMBOLS.get(currency, currency + " ")
    return f"{sign}{symbol}{abs(rounded):,.2f}"


def _month_name(day: date) -> str:
    return day.strftime("%B %Y")


def render_statement(
    account: Account,
    transactions: Sequence[Transaction],
    period_start: date,
    period_end: date,
    opening_balance: Decimal,
    *,
    width: int = 88,
    show_chart: bool = True,
    notes: Sequence[str] = (),
) -> str:
    """The statement of one account for one period, as fixed-width text.

    Sections: header, summary, transactions by day, spending by category, fees and interest, a
    daily balance chart, and the notes. Transactions outside the period are ignored; the caller
    passes the opening balance, as the ledger computes it, so a statement never recomputes history.
    """
    if period_end < period_start:
        raise ValueError(f"the period ends ({period_end}) before it starts ({period_start})")
    if width < 60:
        raise ValueError("a statement needs at least 60 columns")
    in_period = sorted(
        (t for t in transactions if period_start <= t.booked <= period_end),
        key=lambda t: (t.booked, t.description),
    )
    rule = "─" * width
    out: list[str] = []

    # Header: who, which account, which period.
    title = f"Statement for {_month_name(period_start)}"
    if period_start.month != period_end.month or period_start.year != period_end.year:
        title = f"Statement {period_start:%d %b %Y} – {period_end:%d %b %Y}"
    out.append(title.center(width))
    out.append(rule)
    out.append(account.holder)
    out.extend(account.address)
    out.append("")
    out.append(f"Account {account.number}  ·  opened {account.opened:%d %B %Y}")
    out.append(f"Period {period_start:%d.%m.%Y} – {period_end:%d.%m.%Y}  ·  {len(in_period)} transactions")
    out.append(rule)

    # Summary: money in, money out, and where the balance ended.
    money_in = sum((t.amount for t in in_period if t.amount > 0), Decimal(0))
    money_out = sum((t.amount for t in in_period if t.amount < 0), Decimal(0))
    closing_balance = opening_balance + money_in + money_out
    summary = [
        ("Opening balance", opening_balance),
        ("Money in", money_in),
        ("Money out", money_out),
        ("Closing balance", closing_balance),
    ]
    label_width = max(len(label) for label, _ in summary) + 4
    for label, value in summary:
        out.append(f"{label:<{label_width}}{format_money(value):>20}")
    if closing_balance < 0:
        headroom = account.overdraft_limit + closing_balance
        if headroom < 0:
            out.append(f"! Over the overdraft limit by {format_money(-headroom)}; please pay in promptly.")
        else:
            out.append(f"Overdrawn; {format_money(headroom)} of the overdraft limit left.")
    out.append(rule)

    # Transactions, grouped by day, with a running balance on the last line of each day.
    out.append("Transactions")
    out.append("")
    if not in_period:
        out.append("  No transactions in this period.")
    balance = opening_balance
    amount_width = 14
    description_width = width - 12 - 2 * amount_width - 4
    current_day: date | None = None
    for index, transaction in enumerate(in_period):
        if transaction.booked != current_day:
            current_day = transaction.booked
            out.append(f"  {current_day:%a %d %b}")
        balance += transaction.amount
        description = transaction.description
        if transaction.counterparty:
            description = f"{description} — {transaction.counterparty}"
        wrapped = textwrap.wrap(description, description_width) or [""]
        last_of_day = index + 1 == len(in_period) or in_period[index + 1].booked != current_day
        amount_text = format_money(transaction.amount)
        balance_text = format_money(balance) if last_of_day else ""
        out.append(f"    {wrapped[0]:<{description_width}}  {amount_text:>{amount_width}}  {balance_text:>{amount_width}}")
        for continuation in wrapped[1:]:
            out.append(f"      {continuation}")
    out.append(rule)

    # Spending by category, largest first, with a bar scaled to the largest category.
    spending: dict[str, Decimal] = defaultdict(Decimal)
    for transaction in in_period:
        if transaction.amount < 0 and not transaction.fee:
            spending[transaction.category] += -transaction.amount
    if spending:
        out.append("Spending by category")
        out.append("")
        largest = max(spending.values())
        bar_room = width - 40
        for category, total in sorted(spending.items(), key=lambda item: (-item[1], item[0])):
            share = total / -money_out if money_out else Decimal(0)
            bar = "█" * max(1, int(bar_room * total / largest))
            out.append(f"  {category[:16]:<16} {format_money(total):>12} {share:>6.1%}  {bar}")
        out.append(rule)

    # Possible duplicates: the same amount to the same place on the same day, which people ask about.
    seen: dict[tuple[date, str, Decimal], int] = defaultdict(int)
    for transaction in in_period:
        if transaction.amount < 0:
            seen[(transaction.booked, transaction.description.casefold(), transaction.amount)] += 1
    duplicates = sorted((key, count) for key, count in seen.items() if count > 1)
    if duplicates:
        out.append("Possible duplicates")
        out.append("")
        for (booked, description, _), count in duplicates:
            out.append(f"  {booked:%d %b}  {description[: width - 24]}  ×{count}")
        out.append("  Tell us if you did not make these payments more than once.")
        out.append(rule)

    # Activity: how the month was spent, in counts rather than money.
    if in_period:
        weekdays = [0] * 7
        for transaction in in_period:
            weekdays[transaction.booked.weekday()] += 1
        busiest = max(range(7), key=lambda day: (weekdays[day], -day))
        counterparties: dict[str, int] = defaultdict(int)
        for transaction in in_period:
            if transaction.counterparty:
                counterparties[transaction.counterparty] += 1
        out.append("Activity")
        out.append("")
        names = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
        most = max(weekdays) or 1
        for day, count in enumerate(weekdays):
            bar = "▪" * round(20 * count / most)
            marker = "  ← busiest" if day == busiest and count else ""
            out.append(f"  {names[day]}  {count:>3}  {bar}{marker}")
        out.append("")
        out.append(f"  {len(counterparties)} different payees and payers")
        regulars = sorted(counterparties.items(), key=lambda item: (-item[1], item[0]))[:5]
        for name, count in regulars:
            if count > 1:
                out.append(f"    {name[: width - 20]:<{width - 20}} {count:>3} times")
        out.append(rule)

    # Fees and interest: what the bank took and gave.
    fees = [t for t in in_period if t.fee]
    days = (period_end - period_start).days + 1
    average_balance = _average_daily_balance(in_period, opening_balance, period_start, days)
    interest = Decimal(0)
    if average_balance > 0:
        interest = (average_balance * account.interest_rate * days / 365).quantize(CENT)
    if fees or interest:
        out.append("Fees and interest")
        out.append("")
        for fee in fees:
            out.append(f"  {fee.booked:%d %b}  {fee.description:<40} {format_money(fee.amount):>14}")
        if fees:
            fee_total = sum((fee.amount for fee in fees), Decimal(0))
            out.append(f"  {'Fees in this period':<47} {format_money(fee_total):>14}")
        if interest:
            rate = f"{account.interest_rate * 100:.2f} %"
            out.append(f"  Interest at {rate} on an average balance of {format_money(average_balance)}: {format_money(interest)}")
            out.append("  (credited on the first working day of next month)")
        out.append(rule)

    # A daily balance chart: one column per day, scaled between the lowest and highest balance.
    if show_chart and in_period and days <= width - 10:
        balances = _daily_balances(in_period, opening_balance, period_start, days)
        low, high = min(balances), max(balances)
        height = 8
        span = high - low or Decimal(1)
        out.append("Balance, day by day")
        out.append("")
        for row in range(height, 0, -1):
            threshold = low + span * row / height
            cells = "".join("▇" if value >= threshold else " " for value in balances)
            axis = f"{float(threshold):>9.0f} " if row in (height, 1) else " " * 10
            out.append(axis + cells)
        ticks = "".join("|" if (period_start + timedelta(days=i)).day in (1, 15) else " " for i in range(days))
        out.append(" " * 10 + ticks)
        out.append(rule)

    # Pending: dated after the period, so on the next statement; listed so nothing seems lost.
    pending = sorted((t for t in transactions if t.booked > period_end), key=lambda t: t.booked)
    if pending:
        out.append("Pending")
        out.append("")
        out.append(f"  {len(pending)} transactions dated after {period_end:%d %b} will appear on the next statement:")
        for transaction in pending[:5]:
            out.append(f"    {transaction.booked:%d %b}  {transaction.description[: width - 14]}")
        if len(pending) > 5:
            out.append(f"    … and {len(pending) - 5} more")
        out.append(rule)

    # Notes: ours first, then the caller's, wrapped to the width.
    standing = [
        "Please check this statement and tell us within 30 days if anything looks wrong.",
        "Card payments are shown on the day they were booked, which may be after the day you paid.",
    ]
    if closing_balance < 0:
        standing.append("Interest on overdrafts is charged monthly at the rate in your agreement.")
    for note in [*standing, *notes]:
        for index, line in enumerate(textwrap.wrap(note, width - 4)):
            out.append(("  • " if index == 0 else "    ") + line)
    out.append(rule)
    out.append(f"Generated {date.today():%d %B %Y}".rjust(width))
    return "\n".join(out) + "\n"


def _daily_balances(
    transactions: Sequence[Transaction], opening_balance: Decimal, start: date, days: int
) -> list[Decimal]:
    """The balance at the end of each day of the period."""
    by_day: dict[date, Decimal] = defaultdict(Decimal)
    for transaction in transactions:
        by_day[transaction.booked] += transaction.amount
    balances = []
    balance = opening_balance
    for offset in range(days):
        balance += by_day.get(start + timedelta(days=offset), Decimal(0))
        balances.append(balance)
    return balances


def _average_daily_balance(
    transactions: Sequence[Transaction], opening_balance: Decimal, start: date, days: int
) -> Decimal:
    balances = _daily_balances(transactions, opening_balance, start, days)
    return sum(balances, Decimal(0)) / len(balances) if balances else opening_balance

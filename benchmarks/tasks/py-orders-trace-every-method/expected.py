"""Orders: placing, paying, shipping and refunding, over a repository and a payment gateway."""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from decimal import Decimal
from enum import Enum
from typing import Any, Protocol, TypeVar

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])


def traced(method: F) -> F:
    """Log how long a service call took, and its failure if it failed, under the method's name."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return method(*args, **kwargs)
        except Exception:
            log.exception("%s failed after %.1f ms", method.__qualname__, (time.perf_counter() - started) * 1000)
            raise
        finally:
            log.debug("%s took %.1f ms", method.__qualname__, (time.perf_counter() - started) * 1000)

    return wrapper  # type: ignore[return-value]


class Status(str, Enum):
    DRAFT = "draft"
    PLACED = "placed"
    PAID = "paid"
    SHIPPED = "shipped"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"
    REFUNDED = "refunded"


@dataclass(frozen=True)
class Line:
    sku: str
    quantity: int
    unit_price: Decimal

    @property
    def total(self) -> Decimal:
        return self.unit_price * self.quantity


@dataclass(frozen=True)
class Order:
    id: str
    customer_id: str
    lines: tuple[Line, ...]
    status: Status = Status.DRAFT
    shipping_address: str = ""
    payment_id: str | None = None
    tracking_number: str | None = None
    history: tuple[tuple[datetime, Status, str], ...] = field(default=())

    @property
    def total(self) -> Decimal:
        return sum((line.total for line in self.lines), Decimal(0))


class OrderError(Exception):
    """An order cannot do what was asked; the message says why."""


class Repository(Protocol):
    def get(self, order_id: str) -> Order | None: ...
    def save(self, order: Order) -> None: ...
    def for_customer(self, customer_id: str) -> list[Order]: ...


class Gateway(Protocol):
    def charge(self, customer_id: str, amount: Decimal, reference: str) -> str: ...
    def refund(self, payment_id: str, amount: Decimal) -> None: ...


class Inventory(Protocol):
    def reserve(self, sku: str, quantity: int) -> bool: ...
    def release(self, sku: str, quantity: int) -> None: ...


class OrderService:
    """The order life cycle. Every change goes through `_move`, which checks the transition and
    records it in the order's history, so an order's story can always be told from the order alone.

    draft → placed (stock reserved) → paid (charged) → shipped → delivered; a draft or a placed
    order can be cancelled (the stock is released), and a paid, shipped or delivered order can be
    refunded, in full or in parts until nothing is left. The service saves after every step: a
    crash between two steps leaves an order in the last state it reached, never half-way.

    Money is Decimal throughout, and the gateway is only ever asked for what the order says.
    """

    TRANSITIONS = {
        Status.DRAFT: {Status.PLACED, Status.CANCELLED},
        Status.PLACED: {Status.PAID, Status.CANCELLED},
        Status.PAID: {Status.SHIPPED, Status.REFUNDED},
        Status.SHIPPED: {Status.DELIVERED, Status.REFUNDED},
        Status.DELIVERED: {Status.REFUNDED},
        Status.CANCELLED: set(),
        Status.REFUNDED: set(),
    }
    MAX_LINES = 50

    def __init__(
        self,
        repository: Repository,
        gateway: Gateway,
        inventory: Inventory,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ) -> None:
        self.repository = repository
        self.gateway = gateway
        self.inventory = inventory
        self.clock = clock

    @traced
    def create(self, customer_id: str, lines: Iterable[Line], shipping_address: str = "") -> Order:
        """A new draft order; nothing is reserved or charged yet."""
        items = self._validate_lines(tuple(lines))
        order = Order(id=uuid.uuid4().hex[:12], customer_id=customer_id, lines=items, shipping_address=shipping_address)
        order = self._move(order, Status.DRAFT, "created", check=False)
        self.repository.save(order)
        return order

    @traced
    def add_line(self, order_id: str, line: Line) -> Order:
        order = self._load(order_id)
        if order.status is not Status.DRAFT:
            raise OrderError(f"order {order_id} is {order.status.value}; only drafts can change")
        merged = list(order.lines)
        for index, existing in enumerate(merged):
            if existing.sku == line.sku and existing.unit_price == line.unit_price:
                merged[index] = replace(existing, quantity=existing.quantity + line.quantity)
                break
        else:
            merged.append(line)
        order = replace(order, lines=self._validate_lines(tuple(merged)))
        self.repository.save(order)
        return order

    @traced
    def remove_line(self, order_id: str, sku: str) -> Order:
        order = self._load(order_id)
        if order.status is not Status.DRAFT:
            raise OrderError(f"order {order_id} is {order.status.value}; only drafts can change")
        kept = tuple(line for line in order.lines if line.sku != sku)
        if len(kept) == len(order.lines):
            raise OrderError(f"order {order_id} has no line for {sku}")
        if not kept:
            raise OrderError("an order needs at least one line; cancel it instead")
        order = replace(order, lines=kept)
        self.repository.save(order)
        return order

    @traced
    def place(self, order_id: str) -> Order:
        """Reserve the stock for every line; all or nothing."""
        order = self._load(order_id)
        self._check_address(order.shipping_address)
        reserved = self._reserve_all(order.lines)
        order = self._move(order, Status.PLACED, f"{len(reserved)} lines reserved")
        self.repository.save(order)
        return order

    @traced
    def pay(self, order_id: str) -> Order:
        """Charge the order's total. Paying a paid order again is a no-op, so a retried request is safe."""
        order = self._load(order_id)
        if order.status is Status.PAID and order.payment_id is not None:
            return order
        if order.status is not Status.PLACED:
            raise OrderError(f"order {order_id} is {order.status.value}; only placed orders can be paid")
        payment_id = self.gateway.charge(order.customer_id, order.total, reference=order.id)
        order = self._move(replace(order, payment_id=payment_id), Status.PAID, f"charged {order.total}")
        self.repository.save(order)
        return order

    @traced
    def ship(self, order_id: str, tracking_number: str) -> Order:
        """Hand the order to the carrier; the tracking number is what the customer will be sent."""
        tracking_number = tracking_number.strip().upper()
        if not tracking_number:
            raise OrderError("a shipment needs a tracking number")
        if not tracking_number.isalnum() or not 8 <= len(tracking_number) <= 30:
            raise OrderError(f"{tracking_number!r} does not look like a carrier's tracking number")
        order = self._load(order_id)
        order = self._move(replace(order, tracking_number=tracking_number), Status.SHIPPED, tracking_number)
        self.repository.save(order)
        return order

    @traced
    def deliver(self, order_id: str) -> Order:
        order = self._move(self._load(order_id), Status.DELIVERED, "delivered")
        self.repository.save(order)
        return order

    @traced
    def cancel(self, order_id: str, reason: str) -> Order:
        """Cancel a draft or a placed order, releasing what was reserved."""
        order = self._load(order_id)
        if order.status is Status.PLACED and not reason.strip():
            # Placed orders were promised to the customer: support needs to know why they were dropped.
            raise OrderError("say why a placed order is cancelled")
        if order.status is Status.PLACED:
            self._release_all(order.lines)
        order = self._move(order, Status.CANCELLED, reason or "cancelled")
        self.repository.save(order)
        return order

    @traced
    def refund(self, order_id: str, amount: Decimal | None = None, reason: str = "") -> Order:
        """Refund a paid order, in full unless `amount` says less."""
        order = self._load(order_id)
        if order.payment_id is None:
            raise OrderError(f"order {order_id} was never paid")
        to_refund = self._refundable(order, amount)
        self.gateway.refund(order.payment_id, to_refund)
        order = self._move(order, Status.REFUNDED, f"refunded {to_refund}" + (f": {reason}" if reason else ""))
        self.repository.save(order)
        return order

    @traced
    def history(self, order_id: str) -> list[str]:
        """The order's story, one line per step, oldest first."""
        order = self._load(order_id)
        return [f"{when:%Y-%m-%d %H:%M} {status.value:<10} {note}" for when, status, note in order.history]

    @traced
    def open_orders(self, customer_id: str) -> list[Order]:
        """The customer's orders that are not finished, newest first."""
        finished = {Status.DELIVERED, Status.CANCELLED, Status.REFUNDED}
        orders = [order for order in self.repository.for_customer(customer_id) if order.status not in finished]
        return sorted(orders, key=lambda order: order.history[-1][0] if order.history else datetime.min, reverse=True)

    @traced
    def lifetime_value(self, customer_id: str) -> Decimal:
        """What the customer paid us and kept: paid, shipped and delivered orders."""
        kept = {Status.PAID, Status.SHIPPED, Status.DELIVERED}
        return sum(
            (order.total for order in self.repository.for_customer(customer_id) if order.status in kept), Decimal(0)
        )

    @traced
    def receipt(self, order_id: str, width: int = 48) -> str:
        """A plain-text receipt: the lines, the total, how it was paid and where it went."""
        order = self._load(order_id)
        if order.status in (Status.DRAFT, Status.PLACED, Status.CANCELLED):
            raise OrderError(f"order {order_id} is {order.status.value}: there is nothing to give a receipt for")
        rule = "-" * width
        rows = [f"Order {order.id}".center(width), rule]
        for line in order.lines:
            left = f"{line.quantity} × {line.sku}"
            right = f"{line.total:.2f}"
            rows.append(f"{left[: width - len(right) - 1]:<{width - len(right)}}{right}")
            if line.quantity > 1:
                rows.append(f"    at {line.unit_price:.2f} each")
        rows.append(rule)
        rows.append(f"{'Total':<{width - 12}}{order.total:>12.2f}")
        if order.payment_id:
            rows.append(f"Paid, reference {order.payment_id}")
        if order.tracking_number:
            rows.append(f"Shipped, tracking {order.tracking_number}")
        if order.shipping_address:
            rows.append("Ship to:")
            rows.extend(f"  {part.strip()}" for part in order.shipping_address.split(",") if part.strip())
        refunds = self._refunds(order)
        if refunds:
            rows.append(rule)
            rows.extend(f"{'Refunded':<{width - 12}}{-amount:>12.2f}" for amount in refunds)
            rows.append(f"{'Kept':<{width - 12}}{order.total - sum(refunds, Decimal(0)):>12.2f}")
        placed = next((when for when, status, _ in order.history if status is Status.PLACED), None)
        if placed is not None:
            rows.append(rule)
            rows.append(f"Placed {placed:%d %B %Y, %H:%M} UTC")
        return "\n".join(rows) + "\n"

    def _validate_lines(self, items: tuple[Line, ...]) -> tuple[Line, ...]:
        """The lines, if an order may hold them; else OrderError naming the first problem."""
        if not items:
            raise OrderError("an order needs at least one line")
        if len(items) > self.MAX_LINES:
            raise OrderError(f"an order holds at most {self.MAX_LINES} lines, not {len(items)}")
        seen: set[tuple[str, Decimal]] = set()
        for line in items:
            if not line.sku.strip():
                raise OrderError("every line needs a SKU")
            if line.quantity < 1:
                raise OrderError(f"{line.sku}: the quantity must be at least 1")
            if line.unit_price < 0:
                raise OrderError(f"{line.sku}: the price must not be negative")
            if (line.sku, line.unit_price) in seen:
                raise OrderError(f"{line.sku} appears twice at the same price; merge the lines")
            seen.add((line.sku, line.unit_price))
        return items

    def _reserve_all(self, lines: tuple[Line, ...]) -> list[Line]:
        """Reserve every line's stock, or none: a line that cannot be reserved releases the others."""
        reserved: list[Line] = []
        for line in lines:
            if not self.inventory.reserve(line.sku, line.quantity):
                self._release_all(reserved)
                raise OrderError(f"not enough stock of {line.sku} for {line.quantity}")
            reserved.append(line)
        return reserved

    def _release_all(self, lines: Iterable[Line]) -> None:
        for line in lines:
            try:
                self.inventory.release(line.sku, line.quantity)
            except Exception:  # the stock count is fixed by the nightly audit; the order must still move on
                log.exception("could not release %s × %s", line.quantity, line.sku)

    def _refundable(self, order: Order, amount: Decimal | None) -> Decimal:
        """What may be refunded now: the whole total, or `amount` if it is within it."""
        left = order.total - sum(self._refunds(order), Decimal(0))
        to_refund = left if amount is None else amount
        if not Decimal(0) < to_refund <= left:
            raise OrderError(f"a refund must be more than 0 and at most {left}, not {to_refund}")
        return to_refund

    @staticmethod
    def _refunds(order: Order) -> list[Decimal]:
        """The amounts refunded so far, read back from the history notes `_move` wrote."""
        amounts = []
        for _, status, note in order.history:
            if status is Status.REFUNDED and note.startswith("refunded "):
                amounts.append(Decimal(note.split()[1].rstrip(":")))
        return amounts

    @staticmethod
    def _check_address(address: str) -> None:
        """A shipping address the carrier will take: a street, a postcode and a town, comma-separated."""
        parts = [part.strip() for part in address.split(",") if part.strip()]
        if not parts:
            raise OrderError("set a shipping address before placing the order")
        if len(parts) < 3:
            raise OrderError("a shipping address needs a street, a postcode and a town, separated by commas")
        if len(address) > 300:
            raise OrderError("the shipping address is too long for the carrier's label (300 characters)")
        if not any(char.isdigit() for char in parts[-2] + parts[-1]):
            raise OrderError("the shipping address has no postcode")

    def _load(self, order_id: str) -> Order:
        order = self.repository.get(order_id)
        if order is None:
            raise OrderError(f"no order {order_id}")
        return order

    def _move(self, order: Order, to: Status, note: str, check: bool = True) -> Order:
        if check and to not in self.TRANSITIONS[order.status]:
            raise OrderError(f"order {order.id} cannot go from {order.status.value} to {to.value}")
        step = (self.clock(), to, note)
        log.info("order %s: %s → %s (%s)", order.id, order.status.value, to.value, note)
        return replace(order, status=to, history=(*order.history, step))


class InMemoryRepository:
    """A repository for tests and scripts."""

    def __init__(self) -> None:
        self._orders: dict[str, Order] = {}

    def get(self, order_id: str) -> Order | None:
        return self._orders.get(order_id)

    def save(self, order: Order) -> None:
        self._orders[order.id] = order

    def for_customer(self, customer_id: str) -> list[Order]:
        return [order for order in self._orders.values() if order.customer_id == customer_id]

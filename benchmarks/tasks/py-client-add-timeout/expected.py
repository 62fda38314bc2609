"""Minimal JSON client for the inventory service REST API."""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://inventory.internal.example.com/api/v2"
RETRYABLE_STATUS = frozenset({429, 502, 503, 504})
USER_AGENT = "inventory-client/1.4"


class ApiError(Exception):
    """Raised when the service answers with a non-success status."""

    def __init__(self, status: int, message: str, body: Optional[str] = None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.body = body


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    quantity: int
    warehouse: str
    price_cents: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Item":
        return cls(
            sku=str(data["sku"]),
            name=str(data.get("name", "")),
            quantity=int(data.get("quantity", 0)),
            warehouse=str(data.get("warehouse", "default")),
            price_cents=int(data.get("price_cents", 0)),
        )

    def to_json(self) -> Dict[str, Any]:
        return {
            "sku": self.sku,
            "name": self.name,
            "quantity": self.quantity,
            "warehouse": self.warehouse,
            "price_cents": self.price_cents,
        }


def _build_url(base: str, path: str, params: Optional[Mapping[str, Any]] = None) -> str:
    url = base.rstrip("/") + "/" + path.lstrip("/")
    if params:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        url = f"{url}?{query}"
    return url


class InventoryClient:
    """Thin wrapper over the inventory REST API with retry on transient errors."""

    def __init__(
        self,
        token: str,
        base_url: str = DEFAULT_BASE_URL,
        max_retries: int = 3,
        backoff: float = 0.5,
        timeout: float = 30.0,
    ) -> None:
        self.base_url = base_url
        self.max_retries = max_retries
        self.backoff = backoff
        self.timeout = timeout
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }

    def _send(
        self,
        method: str,
        path: str,
        params: Optional[Mapping[str, Any]] = None,
        payload: Optional[Mapping[str, Any]] = None,
    ) -> Any:
        url = _build_url(self.base_url, path, params)
        data = json.dumps(payload).encode("utf-8") if payload is not None else None
        headers = dict(self._headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        attempt = 0
        while True:
            attempt += 1
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    body = response.read().decode("utf-8")
                    return json.loads(body) if body else None
            except urllib.error.HTTPError as exc:
                body = exc.read().decode("utf-8", errors="replace")
                if exc.code in RETRYABLE_STATUS and attempt <= self.max_retries:
                    delay = self.backoff * (2 ** (attempt - 1))
                    log.warning("%s %s -> %d, retrying in %.1fs", method, url, exc.code, delay)
                    time.sleep(delay)
                    continue
                raise ApiError(exc.code, str(exc.reason), body) from exc
            except urllib.error.URLError as exc:
                if attempt <= self.max_retries:
                    delay = self.backoff * (2 ** (attempt - 1))
                    log.warning("%s %s failed (%s), retrying in %.1fs", method, url, exc.reason, delay)
                    time.sleep(delay)
                    continue
                raise

    def get_item(self, sku: str) -> Item:
        return Item.from_json(self._send("GET", f"/items/{urllib.parse.quote(sku)}"))

    def list_items(self, warehouse: Optional[str] = None, page_size: int = 100) -> Iterator[Item]:
        cursor: Optional[str] = None
        while True:
            page = self._send(
                "GET",
                "/items",
                params={"warehouse": warehouse, "limit": page_size, "cursor": cursor},
            )
            for raw in page.get("items", []):
                yield Item.from_json(raw)
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def upsert_item(self, item: Item) -> Item:
        data = self._send("PUT", f"/items/{urllib.parse.quote(item.sku)}", payload=item.to_json())
        return Item.from_json(data)

    def adjust_quantity(self, sku: str, delta: int, reason: str) -> int:
        data = self._send(
            "POST",
            f"/items/{urllib.parse.quote(sku)}/adjustments",
            payload={"delta": delta, "reason": reason},
        )
        return int(data["quantity"])

    def delete_item(self, sku: str) -> None:
        self._send("DELETE", f"/items/{urllib.parse.quote(sku)}")

    def download_report(self, report_id: str, destination: str) -> int:
        url = _build_url(self.base_url, f"/reports/{urllib.parse.quote(report_id)}/download")
        request = urllib.request.Request(url, headers=self._headers)
        written = 0
        with urllib.request.urlopen(request, timeout=self.timeout) as response, open(destination, "wb") as out:
            while True:
                chunk = response.read(64 * 1024)
                if not chunk:
                    break
                out.write(chunk)
                written += len(chunk)
        return written


def total_stock_value(items: List[Item]) -> int:
    """Sum of quantity * unit price over all items, in cents."""
    return sum(item.quantity * item.price_cents for item in items)


def low_stock(items: List[Item], threshold: int = 5) -> List[Item]:
    """Items at or below the threshold, emptiest first."""
    return sorted(
        (item for item in items if item.quantity <= threshold),
        key=lambda item: (item.quantity, item.sku),
    )

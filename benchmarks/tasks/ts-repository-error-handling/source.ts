export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface PoolClient {
  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<QueryResult<R>>;
  release(err?: Error): void;
}

export interface Pool {
  connect(): Promise<PoolClient>;
  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<QueryResult<R>>;
}

export type OrderStatus = "pending" | "paid" | "shipped" | "cancelled";

export interface OrderLine {
  sku: string;
  quantity: number;
  unitPriceCents: number;
}

export interface Order {
  id: string;
  reference: string;
  customerId: string;
  status: OrderStatus;
  lines: OrderLine[];
  createdAt: Date;
}

export interface NewOrder {
  reference: string;
  customerId: string;
  lines: OrderLine[];
}

interface OrderRow {
  id: string;
  reference: string;
  customer_id: string;
  status: OrderStatus;
  created_at: Date;
}

interface OrderLineRow {
  order_id: string;
  sku: string;
  quantity: number;
  unit_price_cents: number;
}

export class NotFoundError extends Error {
  constructor(
    readonly entity: string,
    readonly id: string,
  ) {
    super(`${entity} ${id} not found`);
    this.name = "NotFoundError";
  }
}

export class DuplicateOrderError extends Error {
  constructor(readonly reference: string) {
    super(`an order with reference ${reference} already exists`);
    this.name = "DuplicateOrderError";
  }
}

const UNIQUE_VIOLATION = "23505";

function isUniqueViolation(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: string }).code === UNIQUE_VIOLATION;
}

function toOrder(row: OrderRow, lines: OrderLineRow[]): Order {
  return {
    id: row.id,
    reference: row.reference,
    customerId: row.customer_id,
    status: row.status,
    createdAt: row.created_at,
    lines: lines.map((l) => ({ sku: l.sku, quantity: l.quantity, unitPriceCents: l.unit_price_cents })),
  };
}

export function orderTotalCents(order: Pick<Order, "lines">): number {
  return order.lines.reduce((sum, line) => sum + line.quantity * line.unitPriceCents, 0);
}

export class OrderRepository {
  constructor(private readonly pool: Pool) {}

  async findById(id: string): Promise<Order> {
    const { rows } = await this.pool.query<OrderRow>(
      "SELECT id, reference, customer_id, status, created_at FROM orders WHERE id = $1",
      [id],
    );
    if (rows.length === 0) {
      throw new NotFoundError("order", id);
    }
    const lines = await this.pool.query<OrderLineRow>(
      "SELECT order_id, sku, quantity, unit_price_cents FROM order_lines WHERE order_id = $1 ORDER BY sku",
      [id],
    );
    return toOrder(rows[0], lines.rows);
  }

  async listForCustomer(customerId: string, limit = 50): Promise<Order[]> {
    const { rows } = await this.pool.query<OrderRow>(
      `SELECT id, reference, customer_id, status, created_at
         FROM orders WHERE customer_id = $1
        ORDER BY created_at DESC LIMIT $2`,
      [customerId, limit],
    );
    if (rows.length === 0) {
      return [];
    }
    const lines = await this.pool.query<OrderLineRow>(
      "SELECT order_id, sku, quantity, unit_price_cents FROM order_lines WHERE order_id = ANY($1) ORDER BY sku",
      [rows.map((r) => r.id)],
    );
    const byOrder = new Map<string, OrderLineRow[]>();
    for (const line of lines.rows) {
      const bucket = byOrder.get(line.order_id) ?? [];
      bucket.push(line);
      byOrder.set(line.order_id, bucket);
    }
    return rows.map((row) => toOrder(row, byOrder.get(row.id) ?? []));
  }

  async createOrder(input: NewOrder): Promise<Order> {
    if (input.lines.length === 0) {
      throw new Error("an order needs at least one line");
    }
    const client = await this.pool.connect();
    await client.query("BEGIN");
    const { rows } = await client.query<OrderRow>(
      `INSERT INTO orders (reference, customer_id, status)
       VALUES ($1, $2, 'pending')
       RETURNING id, reference, customer_id, status, created_at`,
      [input.reference, input.customerId],
    );
    const order = rows[0];
    const lineRows: OrderLineRow[] = [];
    for (const line of input.lines) {
      const inserted = await client.query<OrderLineRow>(
        `INSERT INTO order_lines (order_id, sku, quantity, unit_price_cents)
         VALUES ($1, $2, $3, $4)
         RETURNING order_id, sku, quantity, unit_price_cents`,
        [order.id, line.sku, line.quantity, line.unitPriceCents],
      );
      lineRows.push(inserted.rows[0]);
    }
    await client.query("COMMIT");
    client.release();
    return toOrder(order, lineRows);
  }

  async renameReference(id: string, reference: string): Promise<void> {
    let result: QueryResult<Record<string, unknown>>;
    try {
      result = await this.pool.query("UPDATE orders SET reference = $2 WHERE id = $1", [id, reference]);
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw new DuplicateOrderError(reference);
      }
      throw err;
    }
    if (result.rowCount === 0) {
      throw new NotFoundError("order", id);
    }
  }

  async updateStatus(id: string, from: OrderStatus, to: OrderStatus): Promise<boolean> {
    const result = await this.pool.query("UPDATE orders SET status = $3 WHERE id = $1 AND status = $2", [
      id,
      from,
      to,
    ]);
    return result.rowCount === 1;
  }

  async deleteCancelledBefore(cutoff: Date): Promise<number> {
    const result = await this.pool.query("DELETE FROM orders WHERE status = 'cancelled' AND created_at < $1", [
      cutoff,
    ]);
    return result.rowCount;
  }
}

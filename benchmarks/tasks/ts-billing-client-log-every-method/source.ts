export interface Money {
  amount: number; // minor units (cents)
  currency: string;
}

export interface Customer {
  id: string;
  email: string;
  name: string;
  defaultPaymentMethod?: string;
  createdAt: string;
}

export interface Invoice {
  id: string;
  customerId: string;
  status: "draft" | "open" | "paid" | "void" | "uncollectible";
  lines: { description: string; quantity: number; unitPrice: Money }[];
  total: Money;
  dueAt?: string;
}

export interface Subscription {
  id: string;
  customerId: string;
  plan: string;
  status: "trialing" | "active" | "past_due" | "canceled";
  currentPeriodEnd: string;
  cancelAtPeriodEnd: boolean;
}

export interface Page<T> {
  items: T[];
  next?: string;
}

export class BillingError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = "BillingError";
  }
}

/** Log every call of a client method: its name, how long it took and whether it failed. */
export function logged<This, Args extends unknown[], Return>(
  target: (this: This, ...args: Args) => Promise<Return>,
  context: ClassMethodDecoratorContext<This, (this: This, ...args: Args) => Promise<Return>>,
): (this: This, ...args: Args) => Promise<Return> {
  const name = String(context.name);
  return async function (this: This, ...args: Args): Promise<Return> {
    const started = performance.now();
    try {
      const result = await target.call(this, ...args);
      console.debug(`billing.${name} ok in ${(performance.now() - started).toFixed(0)} ms`);
      return result;
    } catch (error) {
      console.warn(`billing.${name} failed in ${(performance.now() - started).toFixed(0)} ms:`, error);
      throw error;
    }
  };
}

type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

/**
 * The billing provider's REST API, for the parts we use: customers, invoices, subscriptions.
 *
 * Every request carries the API key, POSTs carry an idempotency key (so a retry never charges
 * twice), and 429 or 5xx answers are retried with backoff, honouring Retry-After. The client keeps
 * the rate limit the provider last reported, and waits when it has run out rather than be refused.
 */
export class BillingClient {
  private readonly baseUrl: string;
  private remaining = Number.POSITIVE_INFINITY;
  private resetAt = 0;

  constructor(
    baseUrl: string,
    private readonly apiKey: string,
    private readonly fetchImpl: Fetch = fetch,
    private readonly maxRetries = 3,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    if (!apiKey.startsWith("sk_")) {
      throw new TypeError("a billing API key starts with sk_");
    }
  }

  async createCustomer(email: string, name: string): Promise<Customer> {
    if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) {
      throw new TypeError(`not an e-mail address: ${email}`);
    }
    return this.request<Customer>("POST", "/customers", { email, name: name.trim() });
  }

  async getCustomer(id: string): Promise<Customer | null> {
    try {
      return await this.request<Customer>("GET", this.customerPath(id));
    } catch (error) {
      if (error instanceof BillingError && error.status === 404) {
        return null;
      }
      throw error;
    }
  }

  async updateCustomer(id: string, changes: Partial<Pick<Customer, "email" | "name" | "defaultPaymentMethod">>): Promise<Customer> {
    const body: Record<string, string> = {};
    for (const [key, value] of Object.entries(changes)) {
      if (typeof value === "string") {
        body[key] = value.trim();
      }
    }
    if (Object.keys(body).length === 0) {
      throw new TypeError("nothing to update");
    }
    return this.request<Customer>("PATCH", this.customerPath(id), body);
  }

  async listCustomers(limit = 100): Promise<Customer[]> {
    const customers: Customer[] = [];
    for await (const customer of this.paginate<Customer>("/customers", new URLSearchParams(), limit)) {
      customers.push(customer);
    }
    return customers;
  }

  async createInvoice(customerId: string, lines: Invoice["lines"], dueInDays = 14): Promise<Invoice> {
    this.validateLines(lines);
    const dueAt = new Date(Date.now() + dueInDays * 86_400_000).toISOString();
    return this.request<Invoice>("POST", "/invoices", { customerId, lines, dueAt });
  }

  async finalizeInvoice(id: string): Promise<Invoice> {
    const invoice = await this.request<Invoice>("POST", `/invoices/${encodeURIComponent(id)}/finalize`);
    if (invoice.status !== "open" && invoice.status !== "paid") {
      throw new BillingError(`invoice ${id} is ${invoice.status} after finalizing`, 409, "unexpected_status", false);
    }
    return invoice;
  }

  async payInvoice(id: string, paymentMethod?: string): Promise<Invoice> {
    const body = paymentMethod ? { paymentMethod } : {};
    const invoice = await this.request<Invoice>("POST", `/invoices/${encodeURIComponent(id)}/pay`, body);
    if (invoice.status !== "paid") {
      throw new BillingError(`invoice ${id} is still ${invoice.status}`, 402, "payment_failed", false);
    }
    return invoice;
  }

  async openInvoices(customerId: string): Promise<Invoice[]> {
    const invoices: Invoice[] = [];
    const query = new URLSearchParams({ customerId, status: "open" });
    for await (const invoice of this.paginate<Invoice>("/invoices", query, 1000)) {
      invoices.push(invoice);
    }
    return invoices.sort((a, b) => (a.dueAt ?? "").localeCompare(b.dueAt ?? ""));
  }

  async subscribe(customerId: string, plan: string, trialDays = 0): Promise<Subscription> {
    if (trialDays < 0 || trialDays > 90) {
      throw new RangeError("a trial lasts 0 to 90 days");
    }
    const existing = await this.subscriptionsOf(customerId);
    const active = existing.find((subscription) => subscription.plan === plan && subscription.status !== "canceled");
    if (active) {
      return active;
    }
    return this.request<Subscription>("POST", "/subscriptions", { customerId, plan, trialDays });
  }

  async cancelSubscription(id: string, atPeriodEnd = true): Promise<Subscription> {
    return this.request<Subscription>("DELETE", `/subscriptions/${encodeURIComponent(id)}?atPeriodEnd=${atPeriodEnd}`);
  }

  async subscriptionsOf(customerId: string): Promise<Subscription[]> {
    const page = await this.request<Page<Subscription>>("GET", `/subscriptions?customerId=${encodeURIComponent(customerId)}`);
    return page.items;
  }

  async changePlan(subscriptionId: string, plan: string, prorate = true): Promise<Subscription> {
    if (!/^[a-z0-9][a-z0-9_-]{1,63}$/.test(plan)) {
      throw new TypeError(`not a plan name: ${plan}`);
    }
    return this.request<Subscription>("PATCH", `/subscriptions/${encodeURIComponent(subscriptionId)}`, {
      plan,
      prorationBehavior: prorate ? "create_prorations" : "none",
    });
  }

  private customerPath(id: string): string {
    if (!/^cus_[A-Za-z0-9]{8,}$/.test(id)) {
      throw new TypeError(`not a customer id: ${id}`);
    }
    return `/customers/${id}`;
  }

  private validateLines(lines: Invoice["lines"]): void {
    if (lines.length === 0) {
      throw new TypeError("an invoice needs at least one line");
    }
    if (lines.length > 250) {
      throw new RangeError("an invoice holds at most 250 lines");
    }
    const currencies = new Set(lines.map((line) => line.unitPrice.currency.toUpperCase()));
    if (currencies.size > 1) {
      throw new TypeError(`an invoice has one currency, not ${[...currencies].join(", ")}`);
    }
    for (const line of lines) {
      if (!line.description.trim() || line.description.length > 500) {
        throw new TypeError("every line needs a description of at most 500 characters");
      }
      if (!Number.isInteger(line.quantity) || line.quantity < 1) {
        throw new TypeError(`${line.description}: the quantity must be a whole number of 1 or more`);
      }
      if (!Number.isInteger(line.unitPrice.amount)) {
        throw new TypeError(`${line.description}: prices are whole minor units (cents)`);
      }
    }
  }

  private async *paginate<T>(path: string, query: URLSearchParams, limit: number): AsyncGenerator<T> {
    let cursor: string | undefined;
    let seen = 0;
    do {
      const pageQuery = new URLSearchParams(query);
      pageQuery.set("limit", String(Math.min(limit - seen, 100)));
      if (cursor) {
        pageQuery.set("after", cursor);
      }
      const page = await this.request<Page<T>>("GET", `${path}?${pageQuery}`);
      for (const item of page.items) {
        if (seen >= limit) {
          return;
        }
        seen += 1;
        yield item;
      }
      cursor = page.next;
    } while (cursor && seen < limit);
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    let attempt = 0;
    const idempotencyKey = method === "POST" ? crypto.randomUUID() : undefined;
    for (;;) {
      attempt += 1;
      await this.waitForRateLimit();
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 30_000);
      let response: Response;
      try {
        response = await this.fetchImpl(`${this.baseUrl}${path}`, {
          method,
          headers: {
            Authorization: `Bearer ${this.apiKey}`,
            "Content-Type": "application/json",
            ...(idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {}),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: controller.signal,
        });
      } finally {
        clearTimeout(timer);
      }
      this.noteRateLimit(response.headers);
      if (response.ok) {
        return (await response.json()) as T;
      }
      const error = await this.errorFrom(response);
      if (!error.retryable || attempt > this.maxRetries) {
        throw error;
      }
      const retryAfter = Number(response.headers.get("Retry-After"));
      const delayMs = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : 250 * 2 ** (attempt - 1);
      await new Promise((resolve) => setTimeout(resolve, Math.min(delayMs, 10_000)));
    }
  }

  private noteRateLimit(headers: Headers): void {
    const remaining = Number(headers.get("X-RateLimit-Remaining"));
    const reset = Number(headers.get("X-RateLimit-Reset"));
    if (Number.isFinite(remaining) && headers.has("X-RateLimit-Remaining")) {
      this.remaining = remaining;
    }
    if (Number.isFinite(reset) && reset > 0) {
      this.resetAt = reset * 1000;
    }
  }

  private async waitForRateLimit(): Promise<void> {
    if (this.remaining > 0) {
      return;
    }
    const waitMs = this.resetAt - Date.now();
    if (waitMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(waitMs, 60_000)));
    }
    this.remaining = Number.POSITIVE_INFINITY; // the next answer says how many are left
  }

  private async errorFrom(response: Response): Promise<BillingError> {
    let code = "unknown";
    let message = `${response.status} ${response.statusText}`;
    try {
      const payload = (await response.json()) as { error?: { code?: string; message?: string } };
      code = payload.error?.code ?? code;
      message = payload.error?.message ?? message;
    } catch {
      // Not JSON (a proxy's error page): the status line is all we have.
    }
    const retryable = response.status === 429 || response.status >= 500;
    return new BillingError(message, response.status, code, retryable);
  }
}

export function formatMoney(money: Money, locale = "en-GB"): string {
  return new Intl.NumberFormat(locale, { style: "currency", currency: money.currency }).format(money.amount / 100);
}

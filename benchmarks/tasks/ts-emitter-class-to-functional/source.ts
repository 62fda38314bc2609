/**
 * A tiny strongly-typed event emitter used by the UI shell to broadcast
 * application-level events between otherwise unrelated modules.
 */

export type EventMap = Record<string, unknown>;

export type Handler<T> = (payload: T) => void;

export type Unsubscribe = () => void;

export interface EmitterOptions {
  /** Warn when more than this many handlers are attached to one event. */
  maxListeners?: number;
  /** Called when a handler throws; defaults to console.error. */
  onError?: (error: unknown, event: string) => void;
}

export class Emitter<E extends EventMap> {
  private readonly handlers = new Map<keyof E, Set<Handler<never>>>();
  private readonly maxListeners: number;
  private readonly onError: (error: unknown, event: string) => void;
  private warned = new Set<keyof E>();

  constructor(options: EmitterOptions = {}) {
    this.maxListeners = options.maxListeners ?? 20;
    this.onError = options.onError ?? ((error, event) => console.error(`handler for "${event}" failed`, error));
  }

  on<K extends keyof E>(event: K, handler: Handler<E[K]>): Unsubscribe {
    let set = this.handlers.get(event);
    if (!set) {
      set = new Set();
      this.handlers.set(event, set);
    }
    set.add(handler as Handler<never>);
    if (set.size > this.maxListeners && !this.warned.has(event)) {
      this.warned.add(event);
      console.warn(`event "${String(event)}" has ${set.size} listeners; possible leak`);
    }
    return () => this.off(event, handler);
  }

  once<K extends keyof E>(event: K, handler: Handler<E[K]>): Unsubscribe {
    const unsubscribe = this.on(event, (payload) => {
      unsubscribe();
      handler(payload);
    });
    return unsubscribe;
  }

  off<K extends keyof E>(event: K, handler: Handler<E[K]>): void {
    const set = this.handlers.get(event);
    if (!set) {
      return;
    }
    set.delete(handler as Handler<never>);
    if (set.size === 0) {
      this.handlers.delete(event);
      this.warned.delete(event);
    }
  }

  emit<K extends keyof E>(event: K, payload: E[K]): number {
    const set = this.handlers.get(event);
    if (!set) {
      return 0;
    }
    let called = 0;
    for (const handler of [...set]) {
      try {
        (handler as Handler<E[K]>)(payload);
      } catch (error) {
        this.onError(error, String(event));
      }
      called += 1;
    }
    return called;
  }

  listenerCount(event: keyof E): number {
    return this.handlers.get(event)?.size ?? 0;
  }

  clear(): void {
    this.handlers.clear();
    this.warned.clear();
  }
}

export interface AppEvents extends EventMap {
  "session:expired": { userId: string };
  "theme:changed": { theme: "light" | "dark" };
  "toast": { message: string; level: "info" | "warning" | "error" };
}

export const appEvents = new Emitter<AppEvents>({ maxListeners: 50 });

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

export interface Emitter<E extends EventMap> {
  on<K extends keyof E>(event: K, handler: Handler<E[K]>): Unsubscribe;
  once<K extends keyof E>(event: K, handler: Handler<E[K]>): Unsubscribe;
  off<K extends keyof E>(event: K, handler: Handler<E[K]>): void;
  emit<K extends keyof E>(event: K, payload: E[K]): number;
  listenerCount(event: keyof E): number;
  clear(): void;
}

export function createEmitter<E extends EventMap>(options: EmitterOptions = {}): Emitter<E> {
  const handlers = new Map<keyof E, Set<Handler<never>>>();
  const warned = new Set<keyof E>();
  const maxListeners = options.maxListeners ?? 20;
  const onError =
    options.onError ?? ((error: unknown, event: string) => console.error(`handler for "${event}" failed`, error));

  function on<K extends keyof E>(event: K, handler: Handler<E[K]>): Unsubscribe {
    let set = handlers.get(event);
    if (!set) {
      set = new Set();
      handlers.set(event, set);
    }
    set.add(handler as Handler<never>);
    if (set.size > maxListeners && !warned.has(event)) {
      warned.add(event);
      console.warn(`event "${String(event)}" has ${set.size} listeners; possible leak`);
    }
    return () => off(event, handler);
  }

  function once<K extends keyof E>(event: K, handler: Handler<E[K]>): Unsubscribe {
    const unsubscribe = on(event, (payload) => {
      unsubscribe();
      handler(payload);
    });
    return unsubscribe;
  }

  function off<K extends keyof E>(event: K, handler: Handler<E[K]>): void {
    const set = handlers.get(event);
    if (!set) {
      return;
    }
    set.delete(handler as Handler<never>);
    if (set.size === 0) {
      handlers.delete(event);
      warned.delete(event);
    }
  }

  function emit<K extends keyof E>(event: K, payload: E[K]): number {
    const set = handlers.get(event);
    if (!set) {
      return 0;
    }
    let called = 0;
    for (const handler of [...set]) {
      try {
        (handler as Handler<E[K]>)(payload);
      } catch (error) {
        onError(error, String(event));
      }
      called += 1;
    }
    return called;
  }

  function listenerCount(event: keyof E): number {
    return handlers.get(event)?.size ?? 0;
  }

  function clear(): void {
    handlers.clear();
    warned.clear();
  }

  return { on, once, off, emit, listenerCount, clear };
}

export interface AppEvents extends EventMap {
  "session:expired": { userId: string };
  "theme:changed": { theme: "light" | "dark" };
  "toast": { message: string; level: "info" | "warning" | "error" };
}

export const appEvents = createEmitter<AppEvents>({ maxListeners: 50 });

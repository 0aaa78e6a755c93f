/**
 * Which store has which console reads: a built-in store registers a factory for its own
 * (store/<name>/console.ts) when it is made, and the console looks it up. The map lives on
 * `globalThis` under a `Symbol.for` key: each store subpath is bundled on its own (and ESM and
 * CommonJS copies may both be loaded), so a module-level map would be one per bundle. Registering
 * adds nothing to a store's public shape.
 */
import type { ConsoleSource } from './source.js'

const KEY = Symbol.for('@email-webhooks/core:console-sources')

type Factory = () => ConsoleSource

function sources(): WeakMap<object, Factory> {
  const holder = globalThis as unknown as Record<symbol, WeakMap<object, Factory> | undefined>
  let map = holder[KEY]
  if (map === undefined) {
    map = new WeakMap()
    Object.defineProperty(globalThis, KEY, { value: map, enumerable: false })
  }
  return map
}

/**
 * Registers the console reads of `store` (called by each built-in store's constructor).
 * @param store The store.
 * @param factory Builds its reads, on first use.
 * @example
 * registerConsoleSource(this, () => sqliteConsoleSource(host))
 */
export function registerConsoleSource(store: object, factory: Factory): void {
  sources().set(store, factory)
}

/**
 * The console reads a store registered, if any.
 * @param store The store.
 * @example
 * const source = registeredConsoleSource(store)?.()
 */
export function registeredConsoleSource(store: object): Factory | undefined {
  return sources().get(store)
}

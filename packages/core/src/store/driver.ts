/** Loading the optional client library of a server-backed store. Bundled into each store subpath. */
import { createRequire } from 'node:module'
// Imported by name, not './errors.js': each store subpath is bundled on its own, and a bundled copy of the
// class would fail `error instanceof DedupStoreError` for users, who import it from the main entry.
import { DedupStoreError } from '@email-webhooks/core'

/**
 * A loader that requires `name` once, on first use, and picks the constructor out of it; when the
 * library is missing it throws a `driver_missing` {@link DedupStoreError} with `message`.
 */
export function optionalDriver<T>(name: string, pick: (module: unknown) => T, message: string): () => T {
  let driver: T | undefined
  return () => {
    if (driver !== undefined) return driver
    try {
      driver = pick(createRequire(import.meta.url)(name))
      return driver
    } catch (cause) {
      throw new DedupStoreError('driver_missing', message, { cause })
    }
  }
}

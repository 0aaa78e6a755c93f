/**
 * The default store of Bun, Deno and Workers (`#default-store` → dist/default-store-web.js, a
 * bundle of its own) builds the caller's MemoryDedupStore: a copy of that class, or of
 * DedupStoreError, bundled there would fail `instanceof` in users' code and in the receiver.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DedupStoreError, MemoryDedupStore } from '@email-webhooks/core'
import { describe, expect, it, vi } from 'vitest'

const WEB = join(import.meta.dirname, '..', '..', 'packages', 'core', 'dist', 'default-store-web.js')

describe('the web default store', () => {
  it('bundles no class of its own', () => {
    expect(readFileSync(WEB, 'utf8')).not.toMatch(/\bclass\b/)
  })

  it("returns the caller's MemoryDedupStore, once, and says once that it is not durable", async () => {
    const { getDefaultStore } = (await import(WEB)) as {
      getDefaultStore(errorClass: unknown, create: () => MemoryDedupStore): unknown
    }
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      const store = getDefaultStore(DedupStoreError, () => new MemoryDedupStore())
      expect(store).toBeInstanceOf(MemoryDedupStore)
      expect(getDefaultStore(DedupStoreError, () => new MemoryDedupStore())).toBe(store)
      expect(warn).toHaveBeenCalledTimes(1)
      expect(String(warn.mock.calls[0]?.[0])).toContain('NOT durable')
    } finally {
      warn.mockRestore()
    }
  })
})

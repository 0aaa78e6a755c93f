// A durable dedup store over Deno KV (a local SQLite file, or Deno Deploy's KV), for Deno apps
// that cannot load better-sqlite3. Every write is an atomic compare-and-set on the key's
// versionstamp, so of any number of concurrent claims of a key at most one succeeds.
// Checked with the conformance suite of @email-webhooks/core/testing.
import type { Claim, ClaimOptions, ClaimResult, CompleteOptions, DedupStore } from '@email-webhooks/core'

interface Row {
  status: 'processing' | 'done'
  token: string | null
  attempt: number
  expiresAt: number
}

const PREFIX = 'email_webhook_dedup'

export class DenoKvDedupStore implements DedupStore {
  readonly #kv: Deno.Kv

  constructor(kv: Deno.Kv) {
    this.#kv = kv
  }

  async claim(key: string, { leaseMs, retentionMs }: ClaimOptions): Promise<ClaimResult> {
    for (;;) {
      const entry = await this.#kv.get<Row>([PREFIX, key])
      const row = entry.value
      const now = Date.now()
      if (row && row.expiresAt > now) {
        if (row.status === 'done') return { status: 'duplicate' }
        if (row.token !== null) return { status: 'in_flight', retryAfterMs: row.expiresAt - now }
      }
      const attempt = row && row.status === 'processing' ? row.attempt + 1 : 1
      const token = crypto.randomUUID()
      const next: Row = { status: 'processing', token, attempt, expiresAt: now + leaseMs }
      const result = await this.#kv
        .atomic()
        .check(entry)
        .set([PREFIX, key], next, { expireIn: leaseMs + retentionMs })
        .commit()
      if (result.ok) return { status: 'acquired', claim: { key, token, attempt } }
    }
  }

  async complete(claim: Claim, { retentionMs }: CompleteOptions): Promise<boolean> {
    const entry = await this.#kv.get<Row>([PREFIX, claim.key])
    const row = entry.value
    const now = Date.now()
    if (row?.status !== 'processing' || row.token !== claim.token || row.expiresAt <= now) return false
    const done: Row = { status: 'done', token: null, attempt: row.attempt, expiresAt: now + retentionMs }
    return (await this.#kv.atomic().check(entry).set([PREFIX, claim.key], done, { expireIn: retentionMs }).commit()).ok
  }

  async release(claim: Claim): Promise<boolean> {
    const entry = await this.#kv.get<Row>([PREFIX, claim.key])
    const row = entry.value
    if (row?.status !== 'processing' || row.token !== claim.token) return false
    const released: Row = { ...row, token: null, expiresAt: 0 }
    return (await this.#kv.atomic().check(entry).set([PREFIX, claim.key], released).commit()).ok
  }
}

/**
 * `EmailWebhookDedupObject`: the Durable Object class that keeps one shard of the keys of a
 * `DurableObjectDedupStore`. A Durable Object runs one request at a time and its SQLite storage
 * writes synchronously, so each operation (sql.ts, as for D1) runs in one `transactionSync`:
 * strongly consistent and atomic, durable before the answer leaves (the platform holds outgoing
 * messages until the write is stored). Times are the object's own clock. Expired rows go in an
 * alarm, every 15 minutes while the object holds rows. It answers `POST /<operation>` requests
 * from the store (JSON), not the Internet: bind the class only through a Durable Object namespace.
 */
import {
  claimOperation,
  completeOperation,
  extendOperation,
  lookupOperation,
  type Operation,
  type Rows,
  releaseOperation,
} from './operations.js'
import { readStampSql, refuseNewerSchema, stampStatements } from './schema.js'
import { createTableStatements, type DedupSql, dedupSql, PURGE_BATCH_ROWS, type Statement, statement } from './sql.js'

/** The object's table. */
const TABLE = 'email_webhook_dedup'
/** How often the alarm purges expired rows while the object holds any. */
const PURGE_INTERVAL_MS = 15 * 60 * 1000
/** Purge batches per alarm, at most (each of PURGE_BATCH_ROWS rows per table). */
const PURGE_MAX_BATCHES = 100

/** A SQLite storage cursor: the part the object uses. */
interface SqlCursor {
  toArray(): Record<string, unknown>[]
  readonly rowsWritten: number
}

/** The part of a Durable Object's state the object uses (SQLite-backed storage). */
export interface DurableObjectStateLike {
  storage: {
    sql?: { exec(query: string, ...bindings: unknown[]): SqlCursor }
    transactionSync?<T>(fn: () => T): T
    setAlarm(scheduledTime: number): Promise<void> | void
  }
}

/** A request from the store: which operation, with what. */
export type DedupObjectRequest =
  | { op: 'claim'; key: string; leaseMs: number; order?: { key: string; fact?: string } | undefined }
  | {
      op: 'complete'
      key: string
      token: string
      retentionMs: number
      order?: { key: string; mark: { createdAtMs: number; eventId: string; type: string }; fact?: string } | undefined
      factChange?: { handled: number; reconciled: number } | undefined
    }
  | { op: 'release'; key: string; token: string; orderKey?: string | undefined }
  | { op: 'extend'; key: string; token: string; leaseMs: number; orderKey?: string | undefined }
  | { op: 'lookup'; key: string }

const NOT_SQLITE =
  '[@email-webhooks/cloudflare] EmailWebhookDedupObject needs SQLite storage: declare the class in a migration with new_sqlite_classes (wrangler.toml: [[migrations]] tag = "v1", new_sqlite_classes = ["EmailWebhookDedupObject"]).'

/**
 * The Durable Object class of the dedup store. Export it from your Worker's main module and bind
 * it as a Durable Object namespace with SQLite storage (`new_sqlite_classes`).
 * @example
 * export { EmailWebhookDedupObject } from '@email-webhooks/cloudflare'
 */
export class EmailWebhookDedupObject {
  readonly #state: DurableObjectStateLike
  readonly #sql: DedupSql = dedupSql(TABLE)
  /** Why every request is refused (a newer schema in the storage), or undefined. */
  #refused: string | undefined
  #alarmSet = false

  constructor(state: DurableObjectStateLike, _env?: unknown) {
    this.#state = state
    const sql = state.storage.sql
    if (!sql) return
    // A storage stamped by a newer release is refused (every request answers why), never changed.
    const present = sql.exec(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`, `${TABLE}_schema`).toArray().length > 0
    try {
      refuseNewerSchema(present ? sql.exec(readStampSql(TABLE)).toArray()[0] : undefined, 'the storage of this EmailWebhookDedupObject')
    } catch (error) {
      this.#refused = (error as Error).message
      return
    }
    for (const text of [...createTableStatements(TABLE), ...stampStatements(TABLE)]) sql.exec(text)
  }

  /** Runs one operation of the store and answers its result as JSON (`{ result }`, or `{ error }` with status 500). */
  async fetch(request: Request): Promise<Response> {
    const storage = this.#state.storage
    if (!storage.sql || !storage.transactionSync)
      return Response.json({ error: { code: 'misconfigured', message: NOT_SQLITE } }, { status: 500 })
    if (this.#refused !== undefined) return Response.json({ error: { code: 'misconfigured', message: this.#refused } }, { status: 500 })
    let body: DedupObjectRequest
    try {
      body = (await request.json()) as DedupObjectRequest
    } catch {
      return Response.json({ error: { code: 'command_failed', message: 'the request was not JSON' } }, { status: 400 })
    }
    const now = this.now()
    const operation = this.#operation(body, now)
    if (operation === undefined) return Response.json({ error: { code: 'command_failed', message: 'unknown operation' } }, { status: 400 })
    const rows = this.#transaction(operation.statements)
    if (body.op === 'claim' && !this.#alarmSet) {
      this.#alarmSet = true
      await storage.setAlarm(Date.now() + PURGE_INTERVAL_MS)
    }
    return Response.json({ result: operation.read(rows) })
  }

  /** Deletes expired rows, batch after batch; comes back in 15 minutes while rows remain. */
  async alarm(): Promise<void> {
    const storage = this.#state.storage
    if (!storage.sql || !storage.transactionSync || this.#refused !== undefined) return
    const now = this.now()
    for (const text of this.#sql.purge) {
      for (let batch = 0; batch < PURGE_MAX_BATCHES; batch++) {
        const { sql, params } = statement(text, { now })
        const deleted = storage.sql.exec(sql, ...params).rowsWritten
        if (deleted < PURGE_BATCH_ROWS) break
      }
    }
    const left = storage.sql.exec(`SELECT 1 FROM ${TABLE} LIMIT 1`).toArray().length
    this.#alarmSet = left > 0
    if (left > 0) await storage.setAlarm(Date.now() + PURGE_INTERVAL_MS)
  }

  /** The object's clock, ms since the epoch (`Date.now`); a subclass may shift it in tests. */
  protected now(): number {
    return Date.now()
  }

  #operation(body: DedupObjectRequest, now: number): Operation<unknown> | undefined {
    const sql = this.#sql
    switch (body.op) {
      case 'claim':
        return claimOperation(sql, {
          key: body.key,
          token: crypto.randomUUID(),
          now,
          leaseMs: body.leaseMs,
          order: body.order,
          purge: false,
        })
      case 'complete':
        return completeOperation(sql, body, { retentionMs: body.retentionMs, order: body.order, factChange: body.factChange }, now)
      case 'release':
        return releaseOperation(sql, body, now)
      case 'extend':
        return extendOperation(sql, body, body.leaseMs, now)
      case 'lookup':
        return lookupOperation(sql, body.key, now)
      default:
        return undefined
    }
  }

  /** The statements in one synchronous transaction: all of them or none. */
  #transaction(statements: Statement[]): Rows {
    const storage = this.#state.storage as Required<DurableObjectStateLike['storage']>
    return storage.transactionSync(() => statements.map(({ sql, params }) => storage.sql.exec(sql, ...params).toArray()))
  }
}

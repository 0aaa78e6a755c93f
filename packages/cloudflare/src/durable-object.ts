/**
 * `DurableObjectDedupStore`: durable dedup for Workers in Durable Objects. Keys are sharded over a
 * fixed number of objects (`shards`, default 16) by a hash of the key; each object
 * (`EmailWebhookDedupObject`) is strongly consistent and runs one operation at a time, in one SQLite
 * transaction. Changing `shards` moves keys to other objects, which then do not know them: pick it
 * once. Ordering capability with `shards: 1` only: an email's mark must live in the same object as
 * its events' dedup rows to change in the same transaction.
 */
import type {
  Claim,
  ClaimOptions,
  ClaimResult,
  CompleteOptions,
  DedupKeyState,
  DedupStore,
  DedupStoreErrorCode,
  ExtendOptions,
} from '@email-webhooks/core'
import { DedupStoreError } from '@email-webhooks/core'
import type { DedupObjectRequest } from './dedup-object.js'
import { checkDurations, PACKAGE } from './errors.js'
import { DEFAULT_SHARDS, MAX_SHARDS, shardOf } from './shards.js'

/** The part of a Durable Object stub the store uses. */
export interface DurableObjectStubLike {
  fetch(input: string, init?: { method?: string; body?: string; headers?: Record<string, string> }): Promise<Response>
}

/** The part of a Durable Object namespace binding (`env.EMAIL_WEBHOOK_DEDUP`) the store uses. */
export interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown
  get(id: never): DurableObjectStubLike
}

/** Options of {@link DurableObjectDedupStore}. */
export interface DurableObjectDedupStoreOptions {
  /**
   * Objects the keys are spread over, 1 to 1024. Fixed: changing it moves keys to objects that do
   * not know them (it forgets keys). `1` gives the ordering capability.
   * @defaultValue `16`
   */
  shards?: number
  /**
   * Prefix of the objects' names (`<name>/<shard>`): another name is another set of keys.
   * @defaultValue `email-webhooks-dedup`
   */
  name?: string
}

const ORIGIN = 'https://email-webhooks.dedup/'
const CODES = new Set<DedupStoreErrorCode>(['misconfigured', 'command_failed', 'connection_failed', 'invalid_options'])

/**
 * Dedup store over the `EmailWebhookDedupObject` Durable Object class. Its calls reject with a
 * {@link DedupStoreError}: `invalid_options` for a `leaseMs`/`retentionMs` that is not a whole
 * number of milliseconds ≥ 1; `misconfigured` when the class has no SQLite storage;
 * `connection_failed` when an object cannot be reached (overloaded, reset, the Worker's limits).
 * @param namespace The Durable Object namespace bound to `EmailWebhookDedupObject` (`env.EMAIL_WEBHOOK_DEDUP`).
 * @throws {TypeError} when `namespace` is not a Durable Object namespace, or `shards` is not 1 to 1024.
 * @example
 * const store = new DurableObjectDedupStore(env.EMAIL_WEBHOOK_DEDUP)
 */
export class DurableObjectDedupStore implements DedupStore {
  /** Ordering capability: only with `shards: 1` (marks must share an object with the dedup rows). */
  readonly ordering: boolean
  readonly #namespace: DurableObjectNamespaceLike
  readonly #shards: number
  readonly #name: string
  /** Object ids by shard. Ids, not stubs: a stub is an I/O object of the request that made it, and the store outlives requests. */
  readonly #ids = new Map<number, unknown>()

  constructor(namespace: DurableObjectNamespaceLike, options: DurableObjectDedupStoreOptions = {}) {
    if (
      namespace === null ||
      typeof namespace !== 'object' ||
      typeof namespace.idFromName !== 'function' ||
      typeof namespace.get !== 'function'
    ) {
      throw new TypeError(
        `${PACKAGE} DurableObjectDedupStore needs a Durable Object namespace bound to EmailWebhookDedupObject (env.EMAIL_WEBHOOK_DEDUP): an object with idFromName() and get().`,
      )
    }
    const shards = options.shards ?? DEFAULT_SHARDS
    if (!Number.isSafeInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
      throw new TypeError(`${PACKAGE} shards must be a whole number from 1 to ${MAX_SHARDS}, got ${String(shards)}.`)
    }
    const name = options.name ?? 'email-webhooks-dedup'
    if (typeof name !== 'string' || name.length === 0) throw new TypeError(`${PACKAGE} name must be a non-empty string.`)
    this.#namespace = namespace
    this.#shards = shards
    this.#name = name
    this.ordering = shards === 1
  }

  async claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    checkDurations(opts, true, 'DurableObjectDedupStore')
    const order = this.ordering && opts.order ? { key: opts.order.key, fact: opts.order.fact } : undefined
    return this.#call(key, { op: 'claim', key, leaseMs: opts.leaseMs, order }) as Promise<ClaimResult>
  }

  async complete(claim: Claim, opts: CompleteOptions): Promise<boolean> {
    checkDurations(opts, false, 'DurableObjectDedupStore')
    const order = this.ordering ? opts.order : undefined
    const request: DedupObjectRequest = {
      op: 'complete',
      key: claim.key,
      token: claim.token,
      retentionMs: opts.retentionMs,
      order,
      factChange: opts.factChange,
    }
    return (await this.#call(claim.key, request)) === true
  }

  async release(claim: Claim): Promise<boolean> {
    return (await this.#call(claim.key, { op: 'release', key: claim.key, token: claim.token, orderKey: claim.orderKey })) === true
  }

  /** Renews the claim's lease (and the order key it holds) from now, while its token holds it live. */
  async extend(claim: Claim, opts: ExtendOptions): Promise<boolean> {
    checkDurations({ leaseMs: opts?.leaseMs, retentionMs: 1 }, true, 'DurableObjectDedupStore')
    const request: DedupObjectRequest = {
      op: 'extend',
      key: claim.key,
      token: claim.token,
      leaseMs: opts.leaseMs,
      orderKey: claim.orderKey,
    }
    return (await this.#call(claim.key, request)) === true
  }

  /** What the key's object holds for it now. */
  async lookup(key: string): Promise<DedupKeyState> {
    return this.#call(key, { op: 'lookup', key }) as Promise<DedupKeyState>
  }

  /** A stub, for this request, of the object that holds `key` (with ordering, the one object). */
  #stub(key: string): DurableObjectStubLike {
    const shard = shardOf(key, this.#shards)
    let id = this.#ids.get(shard)
    if (id === undefined) {
      id = this.#namespace.idFromName(`${this.#name}/${shard}`)
      this.#ids.set(shard, id)
    }
    return this.#namespace.get(id as never)
  }

  async #call(key: string, request: DedupObjectRequest): Promise<unknown> {
    let response: Response
    try {
      response = await this.#stub(key).fetch(ORIGIN + request.op, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(request),
      })
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error)
      const overloaded = (error as { overloaded?: unknown } | null)?.overloaded === true
      throw new DedupStoreError(
        'connection_failed',
        `${PACKAGE} the Durable Object of this key did not answer (${detail})${overloaded ? ': it is overloaded; raise shards for new deployments' : ''}; the sender will retry.`,
        { cause: error },
      )
    }
    const body = (await response.json().catch(() => ({}))) as { result?: unknown; error?: { code?: string; message?: string } }
    if (response.ok && 'result' in body) return body.result
    const code = CODES.has(body.error?.code as DedupStoreErrorCode) ? (body.error?.code as DedupStoreErrorCode) : 'command_failed'
    throw new DedupStoreError(code, body.error?.message ?? `${PACKAGE} the Durable Object answered ${response.status}.`)
  }
}

/**
 * `DynamoDBDedupStore`: dedup shared by every instance of an app (every Lambda execution
 * environment), in one DynamoDB table, through `@aws-sdk/client-dynamodb` v3 (an optional peer
 * dependency, loaded only by this module). One item per dedup key (the partition key is the
 * namespaced event id). Each step is ONE conditional write on that item, so it is atomic on the
 * service: `claim` is an `UpdateItem` whose condition takes the key only when it is absent, its
 * `expiresAt` passed, or its lease was released, with `ReturnValuesOnConditionCheckFailure: ALL_OLD`
 * to tell a duplicate from an in-flight claim in the same round trip (a consistent `GetItem` where
 * the server returns no item, as older servers and local emulators do); `complete`, `release` and
 * `extend` are `UpdateItem`s fenced by the claim's token. Times are ms on the caller's clock, in
 * the conditions; the `ttl` attribute (seconds) only lets DynamoDB's TTL delete what expired
 * (schema.ts). No ordering capability (marks would need a multi-item transaction: see the docs'
 * Serverless stores page) and no inbox (on Lambda, hand events to SQS: examples/sqs).
 */
// By package name, not './errors.js': this subpath is bundled on its own, and a bundled copy of the
// class would fail `error instanceof DedupStoreError` for users, who import it from the main entry.
import { DedupStoreError } from '@email-webhooks/core'
import { callDurationProblem, durationProblem } from '../durations.js'
import { newerSchemaError } from '../schema-version.js'
import type { Claim, ClaimOptions, ClaimResult, CompleteOptions, DedupKeyState, DedupStore, ExtendOptions } from '../types.js'
import { UnansweredClaims } from '../unanswered.js'
import { classify, PACKAGE, type TableInfo } from './errors.js'
import { connect, type DynamoDBClientLike, type DynamoDBDedupStoreOptions, type DynamoDBSdk } from './options.js'
import {
  attemptOf,
  DYNAMODB_SCHEMA_VERSION,
  DynamoExpressions,
  type DynamoItem,
  newerSchemaOf,
  stateOf,
  type UpdateParts,
} from './schema.js'

export { DYNAMODB_IAM_ACTIONS } from './errors.js'
export { DEFAULT_DYNAMODB_CALL_TIMEOUT_MS, type DynamoDBClientLike, type DynamoDBDedupStoreOptions } from './options.js'
export {
  DEFAULT_DYNAMODB_PARTITION_KEY,
  DEFAULT_DYNAMODB_TABLE,
  DYNAMODB_TTL_ATTRIBUTE,
  dynamoDBTableInput,
} from './schema.js'

/** Rounds of a claim whose write lost to a key that was free again when read (released or lapsed in between). */
const CLAIM_ROUNDS = 3

/** A failed condition, with the item as it was (`ALL_OLD`) when the server returns it. */
interface ConditionFailed {
  failed: true
  item: DynamoItem | undefined
}

/**
 * Dedup store in a DynamoDB table, shared by every function that points at it. Its calls reject
 * with a {@link DedupStoreError}: `invalid_options` for a `leaseMs`/`retentionMs` that is not a
 * whole number of milliseconds ≥ 1; `throttled` when DynamoDB throttles the table (the receiver
 * answers 503 with Retry-After); `misconfigured` for a missing table, a wrong key schema or a
 * missing IAM permission (the message names the fix); `auth_failed`, `connection_failed`.
 * @throws {TypeError} when an option is invalid, or neither `client` nor a region is given.
 * @throws {DedupStoreError} `driver_missing` when `@aws-sdk/client-dynamodb` is not installed.
 * @example
 * const store = new DynamoDBDedupStore({ table: process.env.DEDUP_TABLE })
 */
export class DynamoDBDedupStore implements DedupStore {
  /** No ordering capability: the receiver reports `ctx.order` as `unknown` (`store_without_ordering`). */
  readonly ordering = false as const
  readonly #sdk: DynamoDBSdk
  readonly #client: DynamoDBClientLike
  readonly #ownsClient: boolean
  readonly #info: TableInfo
  readonly #callTimeoutMs: number
  readonly #now: () => number
  readonly #expressions: DynamoExpressions
  /** Claims that got no answer, given back once the service answers (unanswered.ts). */
  readonly #unanswered: UnansweredClaims = new UnansweredClaims(
    (claim) => this.release(claim),
    () => {},
  )
  #closed = false

  constructor(options: DynamoDBDedupStoreOptions = {}) {
    const connection = connect(options)
    this.#sdk = connection.sdk
    this.#client = connection.client
    this.#ownsClient = connection.ownsClient
    this.#info = connection.info
    this.#callTimeoutMs = connection.callTimeoutMs
    this.#now = connection.now
    this.#expressions = new DynamoExpressions(connection.info.partitionKey)
  }

  /** The table the store uses. */
  get table(): string {
    return this.#info.table
  }

  async claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    this.#checkDurations(opts, true)
    // A claim of this store's that got no answer may hold the event: given back, then claimed again (unanswered.ts).
    return this.#unanswered.claim(key, undefined, () => this.#claimRounds(key, opts))
  }

  /** The claim's conditional writes (`claim` checked the options). */
  async #claimRounds(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    for (let round = 0; round < CLAIM_ROUNDS; round++) {
      const token = crypto.randomUUID()
      const now = this.#now()
      // Past callTimeoutMs or on a dropped connection the write may have been applied all the same.
      const written = await this.#unanswered.send({ key, token }, opts.leaseMs, () =>
        this.#update(key, this.#expressions.claim(token, now, opts.leaseMs), 'UPDATED_NEW'),
      )
      if (!('failed' in written)) return { status: 'acquired', claim: { key, token, attempt: attemptOf(written.attributes) } }
      // The item as the condition saw it; without it (a server that ignores ReturnValuesOnConditionCheckFailure), read it.
      const item = written.item ?? (await this.#get(key))
      this.#refuseNewer(key, item)
      // This very claim holds it: the SDK sent the write again after its first answer was lost.
      if (item?.token?.S === token && stateOf(item, this.#now()).state === 'in_flight') {
        return { status: 'acquired', claim: { key, token, attempt: attemptOf(item) } }
      }
      const found = stateOf(item, this.#now())
      if (found.state === 'done') return { status: 'duplicate' }
      if (found.state === 'in_flight') return { status: 'in_flight', retryAfterMs: Math.max(1, found.leftMs) }
      // Free when read: released, lapsed or deleted between the write and the read. Claim again.
    }
    return { status: 'in_flight', retryAfterMs: 1 }
  }

  async complete(claim: Claim, opts: CompleteOptions): Promise<boolean> {
    this.#checkDurations(opts, false)
    const written = await this.#update(claim.key, this.#expressions.complete(claim.token, this.#now(), opts.retentionMs))
    return !('failed' in written)
  }

  async release(claim: Claim): Promise<boolean> {
    this.#open()
    const written = await this.#update(claim.key, this.#expressions.release(claim.token, this.#now()))
    return !('failed' in written)
  }

  /** Renews the claim's lease from now, while its token holds it live. */
  async extend(claim: Claim, opts: ExtendOptions): Promise<boolean> {
    const problem = durationProblem('leaseMs', opts?.leaseMs)
    if (problem) throw new DedupStoreError('invalid_options', `${PACKAGE} DynamoDBDedupStore: ${problem}`)
    this.#open()
    const written = await this.#update(claim.key, this.#expressions.extend(claim.token, this.#now(), opts.leaseMs))
    return !('failed' in written)
  }

  /** What the table holds for `key` now: one strongly consistent read, no writes. Expired items are `'absent'`. */
  async lookup(key: string): Promise<DedupKeyState> {
    this.#open()
    const item = await this.#get(key)
    this.#refuseNewer(key, item)
    return stateOf(item, this.#now()).state
  }

  /** An item written in a newer release's layout is refused: this store cannot tell what it means. */
  #refuseNewer(key: string, item: DynamoItem | undefined): void {
    const version = newerSchemaOf(item)
    if (version === undefined) return
    const where = `the item ${JSON.stringify(key)} in the DynamoDB table ${this.#info.table}`
    throw newerSchemaError(PACKAGE, where, { version, writtenBy: undefined }, DYNAMODB_SCHEMA_VERSION)
  }

  /** Destroys the client if the store made it (a given client stays usable). */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#unanswered.close()
    if (this.#ownsClient) this.#client.destroy?.()
  }

  #checkDurations(opts: Partial<ClaimOptions>, withLease: boolean): void {
    const problem = callDurationProblem(opts, withLease)
    if (problem) throw new DedupStoreError('invalid_options', `${PACKAGE} DynamoDBDedupStore: ${problem}`)
    this.#open()
  }

  #open(): void {
    if (this.#closed) throw new DedupStoreError('closed', `${PACKAGE} this DynamoDBDedupStore was closed.`)
  }

  /** One conditional `UpdateItem`: its returned attributes, or the failed condition (with the old item when the server sends it). */
  async #update(
    key: string,
    parts: UpdateParts,
    returnValues: 'UPDATED_NEW' | 'NONE' = 'NONE',
  ): Promise<{ attributes: DynamoItem | undefined } | ConditionFailed> {
    const input = {
      TableName: this.#info.table,
      Key: { [this.#info.partitionKey]: { S: key } },
      ...parts,
      ReturnValues: returnValues,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    }
    try {
      const output = (await this.#send(new this.#sdk.UpdateItemCommand(input))) as { Attributes?: DynamoItem }
      return { attributes: output.Attributes }
    } catch (error) {
      if ((error as { name?: unknown } | null)?.name === 'ConditionalCheckFailedException') {
        return { failed: true, item: (error as { Item?: DynamoItem }).Item }
      }
      throw this.#wrap(error)
    }
  }

  /** A strongly consistent `GetItem` of the key's item. */
  async #get(key: string): Promise<DynamoItem | undefined> {
    const input = { TableName: this.#info.table, Key: { [this.#info.partitionKey]: { S: key } }, ConsistentRead: true }
    try {
      return ((await this.#send(new this.#sdk.GetItemCommand(input))) as { Item?: DynamoItem }).Item
    } catch (error) {
      throw this.#wrap(error)
    }
  }

  /** Sends a command, aborted after callTimeoutMs (the SDK's own retries included). */
  #send(command: object): Promise<unknown> {
    return this.#client.send(command, { abortSignal: AbortSignal.timeout(this.#callTimeoutMs) })
  }

  #wrap(error: unknown): DedupStoreError {
    const { code, message } = classify(error, this.#info)
    return new DedupStoreError(code, `${PACKAGE} ${message}`, { cause: error })
  }
}

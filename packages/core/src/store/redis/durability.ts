/**
 * The durability of a Redis server as `RedisDedupStore` needs it: checked once with `CONFIG GET`
 * (`appendonly yes`, `appendfsync always`, `maxmemory-policy noeviction`), and, with `waitFor`,
 * `WAIT` / `WAITAOF` after each completion. Bundled into the Redis subpath.
 */
// By package name, not '../errors.js': this subpath is bundled on its own (see index.ts).
import { DedupStoreError } from '@email-webhooks/core'
import { scrub } from '../redact.js'
import { classify, PACKAGE, withoutCommand } from './errors.js'
import type { RedisClient, RedisWaitFor } from './options.js'

/** What the checks need of the store: its client, the server in messages, and how to turn a Redis error into a `DedupStoreError`. */
export interface RedisServer {
  client: RedisClient
  target: string
  secret: string | undefined
  warn: (message: string) => void
  wrap: (error: unknown) => DedupStoreError
}

/**
 * Checks once that the server keeps completions; a server that forbids `CONFIG` is said once through `warn`.
 * @throws {DedupStoreError} `misconfigured` naming each setting that can lose completed events.
 */
export async function checkServer(server: RedisServer): Promise<void> {
  let settings: Map<string, string>
  try {
    const pairs = (await Promise.all(['appendonly', 'appendfsync', 'maxmemory-policy'].map((name) => server.client.config('GET', name))))
      .flat()
      .map(String)
    settings = new Map()
    for (let i = 0; i + 1 < pairs.length; i += 2) settings.set(pairs[i] as string, pairs[i + 1] as string)
  } catch (error) {
    // Managed services often rename or forbid CONFIG: say once that nothing was checked.
    if (error instanceof Error && /unknown command|NOPERM|not allowed|ERR unknown/i.test(error.message)) {
      const reply = error.message.split(' ')[0] ?? 'an error'
      server.warn(
        scrub(
          `${PACKAGE} ${server.target} does not allow CONFIG GET (${reply}), so the store cannot check that it keeps completed events. Make sure the server runs with appendonly yes, appendfsync always and maxmemory-policy noeviction (on a managed service: its persistence and eviction settings), or pass checkDurability: false to skip the check and this warning.`,
          server.secret,
        ),
      )
      return
    }
    throw server.wrap(error)
  }
  const problems: string[] = []
  if (settings.get('appendonly') === 'no') problems.push('appendonly is no (set appendonly yes)')
  const fsync = settings.get('appendfsync')
  if (fsync !== undefined && fsync !== 'always') problems.push(`appendfsync is ${fsync} (set appendfsync always)`)
  const policy = settings.get('maxmemory-policy')
  if (policy !== undefined && policy !== 'noeviction') problems.push(`maxmemory-policy is ${policy} (set maxmemory-policy noeviction)`)
  if (problems.length > 0) {
    throw new DedupStoreError(
      'misconfigured',
      `${PACKAGE} ${server.target} can lose completed events: ${problems.join('; ')}. Change the server's configuration, or pass checkDurability: false if you accept the loss (the docs' Many instances page says why).`,
    )
  }
}

/**
 * WAIT or WAITAOF on the connection that wrote the completion (or, as `what` says, another write).
 * @throws {DedupStoreError} `durability_timeout` when too few copies confirmed it in time; `misconfigured` when the server cannot WAITAOF.
 */
export async function awaitCopies(
  server: RedisServer,
  { replicas, timeoutMs, aof }: RedisWaitFor,
  what: string = 'a completion',
): Promise<void> {
  const call = (server.client.call as NonNullable<RedisClient['call']>).bind(server.client)
  let local = 1
  let copies: number
  try {
    if (aof) {
      const reply = (await call('WAITAOF', 1, replicas, timeoutMs)) as unknown[]
      local = Number(reply[0])
      copies = Number(reply[1])
    } else {
      copies = Number(await call('WAIT', replicas, timeoutMs))
    }
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error)
    if (aof && /unknown command/i.test(detail)) {
      throw new DedupStoreError(
        'misconfigured',
        `${PACKAGE} ${server.target} does not know WAITAOF (Redis 7.2 or later has it): upgrade the server, or use waitFor without aof.`,
        { cause: withoutCommand(error) },
      )
    }
    if (aof && /appendonly is disabled|numlocal/i.test(detail)) {
      throw new DedupStoreError('misconfigured', `${PACKAGE} ${server.target} refused WAITAOF: ${detail}. Set appendonly yes.`, {
        cause: withoutCommand(error),
      })
    }
    throw server.wrap(error)
  }
  if (local >= 1 && copies >= replicas) return
  const seen = aof ? `${local} of 1 local AOF fsync and ${copies} of ${replicas} replicas` : `${copies} of ${replicas} replicas`
  throw new DedupStoreError(
    'durability_timeout',
    `${PACKAGE} ${what} was written on ${server.target} but only ${seen} confirmed it within ${timeoutMs} ms, so it is not acknowledged (the sender retries). Check the replicas (INFO replication) or raise waitFor.timeoutMs.`,
  )
}

/** Options of {@link checkRedisDurability}. */
export interface RedisDurabilityCheckOptions {
  /** The server as messages name it (never with its password); default `Redis`. */
  target?: string
  /** Where the warning about a server that forbids `CONFIG` goes; default `console.warn`. */
  warn?: (message: string) => void
}

/**
 * Checks that a Redis server keeps what it acknowledged through a restart and never evicts it:
 * `appendonly yes`, `appendfsync always`, `maxmemory-policy noeviction` (read with `CONFIG GET`),
 * as `RedisDedupStore` does for itself; a queue that holds acknowledged events (BullMQ's, for the
 * `@email-webhooks/bullmq` sink) needs the same. A server that forbids `CONFIG` is said once through
 * `warn` and passes.
 * @param client An ioredis client of the server.
 * @throws {DedupStoreError} `misconfigured` naming each setting that can lose events; the server's own failure otherwise.
 * @example
 * await checkRedisDurability(await queue.client, { target: 'BullMQ queue email-webhooks' })
 */
export async function checkRedisDurability(client: RedisClient, options: RedisDurabilityCheckOptions = {}): Promise<void> {
  const target = options.target ?? 'Redis'
  await checkServer({
    client,
    target,
    secret: undefined,
    warn: options.warn ?? ((message) => console.warn(message)),
    wrap: (error) => {
      const { code, message } = classify(error, target)
      return new DedupStoreError(code, `${PACKAGE} ${message}`, { cause: withoutCommand(error) })
    },
  })
}

/**
 * The console's reads of a Redis store (packages/core/src/console): read-only Lua scripts
 * (console-scripts.ts) through the store's own script path (key prefix, NOSCRIPT reload, error
 * wrapping), on the server's clock. A key's dedup value, an email's mark and facts (two hashes),
 * its inbox entries (the unfinished ones from its order set; done and dead ones by a bounded walk,
 * since the inbox indexes those by time only), pages of entries newest first by the score of their
 * state's sorted set, and counts. Done records are keys with an expiry, not indexed by time: they
 * cannot be counted or charted without a SCAN of every key, which the console never runs.
 */
import { factOf } from '../../console/fact-key.js'
import type { ConsoleSource, EntryPage, EntryQuery, EntrySummary, StoreFacts } from '../../console/source.js'
import type { InboxState } from '../inbox.js'
import { CONSOLE_SCRIPTS } from './console-scripts.js'
import type { Script } from './scripts.js'

/** What the reads need of their store. */
export interface RedisConsoleHost {
  /** The store's key prefix. */
  prefix: string
  /** The server, without credentials. */
  location: string
  /** Whether the store keeps order marks (not on a Cluster client). */
  ordering: boolean
  /** Runs `script` on the prefixed `names`; rejects with the store's `DedupStoreError`. */
  run(script: Script, names: string[], ...args: (string | number)[]): Promise<unknown>
}

const INBOX = '{inbox}:'
const SETS = ['pending', 'running', 'dead', 'done', 'age'].map((name) => INBOX + name)
/** Which set lists each state (1-based, in SETS), the entry field of its time, and whether the set's score is that time. */
const LISTED: Record<InboxState, { set: number; field: 'enq' | 'ended'; scoreIsTime: boolean }> = {
  pending: { set: 5, field: 'enq', scoreIsTime: true },
  running: { set: 2, field: 'enq', scoreIsTime: false },
  dead: { set: 3, field: 'ended', scoreIsTime: true },
  done: { set: 4, field: 'ended', scoreIsTime: false },
}
/** The most entries one read walks. */
const WALK_BUDGET = 20_000

type Fields = [
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
]

function summaryOf(key: string, f: Fields, now: number): EntrySummary {
  const [type, state, att, enq, next, ended, err, ok, cms] = f
  const lapsed = state === 'running' && Number(next) <= now
  return {
    key,
    type: type ?? '',
    state: (lapsed ? 'pending' : state) as InboxState,
    attempts: Number(att ?? 0),
    enqueuedAt: Number(enq ?? 0),
    nextAttemptAt: Number(next ?? 0),
    endedAt: ended === null ? null : Number(ended),
    lastError: err,
    orderKey: ok,
    createdAtMs: cms === null ? null : Number(cms),
  }
}

/** The console reads of a Redis store. */
export function redisConsoleSource(host: RedisConsoleHost): ConsoleSource {
  const base = `${host.prefix}${INBOX}`
  const run = (script: Script, names: string[], ...args: (string | number)[]) => host.run(script, names, ...args)
  return {
    kind: 'Redis',
    location: host.location,
    paging: true,
    async overview(): Promise<StoreFacts> {
      const [keys, , , , done] = (await run(CONSOLE_SCRIPTS.overview, SETS)) as number[]
      return {
        figures: [
          { label: 'Keys in the database', value: keys ?? null, note: 'every key of the database, whatever its prefix' },
          { label: 'Inbox entries handled and remembered', value: done ?? null },
        ],
        recordedByHour: undefined,
        notes: [
          'Redis keeps each done record as a key with an expiry, not indexed by time: the console cannot count or chart them without a SCAN of every key, which it never runs against a live server.',
        ],
      }
    },
    async record(key) {
      const reply = (await run(CONSOLE_SCRIPTS.record, [key])) as [string, string, string, number, string] | null
      if (!reply) return { state: 'absent', expiresAt: null, attempt: null }
      const [done, exp, att, token, now] = reply
      const expiresAt = Number(exp)
      if (done === '1')
        return expiresAt > Number(now) ? { state: 'done', expiresAt, attempt: null } : { state: 'absent', expiresAt: null, attempt: null }
      const live = token === 1 && expiresAt > Number(now)
      return { state: live ? 'in_flight' : 'released', expiresAt: live ? expiresAt : null, attempt: Number(att) }
    },
    async email(orderKey, _now, limit) {
      const notes: string[] = []
      let mark: Awaited<ReturnType<ConsoleSource['email']>>['mark']
      let facts: Awaited<ReturnType<ConsoleSource['email']>>['facts']
      if (host.ordering) {
        const [ms, id, type, markTtl, pairs, factTtl, nowText] = (await run(CONSOLE_SCRIPTS.emailMarks, [
          `order:${orderKey}`,
          `order-fact:${orderKey}`,
        ])) as [string | null, string | null, string | null, number, string[], number, string]
        const now = Number(nowText)
        mark =
          ms !== null && id !== null && type !== null
            ? { eventId: id, type, createdAtMs: Number(ms), expiresAt: markTtl > 0 ? now + markTtl : null }
            : null
        const counts = new Map<string, { handled: number; reconciled: number }>()
        for (let i = 0; i + 1 < pairs.length; i += 2) {
          const field = pairs[i] as string
          const fact = field.slice(0, -2)
          const held = counts.get(fact) ?? { handled: 0, reconciled: 0 }
          if (field.endsWith('#h')) held.handled = Number(pairs[i + 1])
          else if (field.endsWith('#r')) held.reconciled = Number(pairs[i + 1])
          counts.set(fact, held)
        }
        const expiresAt = factTtl > 0 ? now + factTtl : null
        facts = [...counts].flatMap(([fact, c]) => factOf({ key: `${orderKey}|${fact}`, ...c, expiresAt }, orderKey))
      } else notes.push('This Redis store keeps no order marks or facts (a Cluster client): nothing per email but inbox entries.')
      const reply = (await run(CONSOLE_SCRIPTS.emailEntries, SETS, base, orderKey, limit, WALK_BUDGET)) as [
        string,
        number,
        ...(string | Fields)[],
      ]
      const now = Number(reply[0])
      if (reply[1] === 0)
        notes.push(
          `Handled and dead inbox entries are indexed by time only: the newest ${WALK_BUDGET.toLocaleString('en-US')} were looked through for this email.`,
        )
      const entries: EntrySummary[] = []
      for (let i = 2; i + 1 < reply.length; i += 2) entries.push(summaryOf(reply[i] as string, reply[i + 1] as Fields, now))
      return { mark, facts, entries, notes }
    },
    async entries(query: EntryQuery): Promise<EntryPage> {
      const listed = LISTED[query.state]
      const cursor = query.cursor === undefined ? null : /^(\d{1,18}):([\s\S]+)$/.exec(query.cursor)
      const reply = (await run(
        CONSOLE_SCRIPTS.entries,
        SETS,
        base,
        listed.set,
        listed.field,
        query.type ?? '',
        query.before ?? '',
        cursor?.[1] ?? '',
        cursor?.[2] ?? '',
        query.limit,
        WALK_BUDGET,
        listed.scoreIsTime ? '1' : '0',
      )) as [string, number, number, ...(string | Fields | null)[]]
      const now = Number(reply[0])
      const entries: EntrySummary[] = []
      let last: { score: string; key: string } | undefined
      for (let i = 3; i + 2 < reply.length; i += 3) {
        const score = reply[i] as string
        const key = reply[i + 1] as string
        const fields = reply[i + 2] as Fields | null
        last = { score, key }
        if (fields) entries.push(summaryOf(key, fields, now))
      }
      const stopped = reply[2] === 0
      const more = reply[1] === 1 || stopped
      const note = [
        stopped ? `Looked through ${WALK_BUDGET.toLocaleString('en-US')} entries for this page; the next page goes on from there.` : '',
        query.state === 'done' ? 'Handled entries are listed by when they are forgotten (their end plus the retention).' : '',
        query.state === 'running' ? 'Running entries are listed by when their lease ends.' : '',
      ]
        .filter(Boolean)
        .join(' ')
      return { entries, next: more && last ? `${last.score}:${last.key}` : undefined, note: note || undefined }
    },
    async countDead(filter) {
      const [count, exact] = (await run(
        CONSOLE_SCRIPTS.countDead,
        SETS,
        base,
        filter.type ?? '',
        filter.before ?? '',
        WALK_BUDGET * 5,
      )) as [number, number]
      return { count, exact: exact === 1 }
    },
  }
}

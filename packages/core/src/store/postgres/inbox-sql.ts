/**
 * The inbox table of `PostgresDedupStore` (`<table>_inbox`) and the statements of its inbox. Times
 * are the database's: `now()`, the start of each statement's own transaction (every inbox statement
 * runs alone), stable, so that the indexes serve the time bounds. A running entry's
 * `next_attempt_at` is when its lease lapses: a take finds due pending entries and lapsed running
 * ones in one range of one index, and every read shows a lapsed running entry as pending.
 */
import { purgeBatch } from './purge.js'

/** The SQL that creates the inbox table of `table` and its indexes (`deadIndex`: with that of its dead entries). */
export function postgresInboxTableSql(table: string, deadIndex = true): string {
  const t = `${table}_inbox`
  return `CREATE TABLE IF NOT EXISTS ${t} (
  key text COLLATE "C" PRIMARY KEY,
  type text NOT NULL,
  payload text NOT NULL,
  timestamp bigint NOT NULL,
  order_key text COLLATE "C",
  created_at_ms bigint,
  state text NOT NULL,
  attempts integer NOT NULL,
  enqueued_at timestamptz NOT NULL,
  next_attempt_at timestamptz NOT NULL,
  token text,
  last_error text,
  ended_at timestamptz,
  expires_at timestamptz,
  failed_at timestamptz,
  retried_at timestamptz,
  retried_attempts integer NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS ${t}_due ON ${t} (next_attempt_at) WHERE state IN ('pending', 'running');
CREATE INDEX IF NOT EXISTS ${t}_order ON ${t} (order_key, created_at_ms, key) WHERE state IN ('pending', 'running');
CREATE INDEX IF NOT EXISTS ${t}_done ON ${t} (expires_at) WHERE state = 'done';
${deadIndex ? `${postgresInboxDeadIndexSql(table)};\n` : ''}`
}

/**
 * The index of the dead entries of `table`'s inbox (`stats()` counts them through it instead of
 * reading every row of the table, done ones included). Added after 0.1.0, with no new schema
 * version: an older build works with it, and without it `stats()` is slow, not wrong.
 * @param concurrently Built without blocking writes (`CONCURRENTLY`: for a large table, by hand; not in a transaction).
 */
export function postgresInboxDeadIndexSql(table: string, concurrently = false): string {
  const t = `${table}_inbox`
  return `CREATE INDEX ${concurrently ? 'CONCURRENTLY ' : ''}IF NOT EXISTS ${t}_dead ON ${t} (ended_at) WHERE state = 'dead'`
}

/** Columns added to the inbox table after 0.1.0, with their definitions (the inbox adds them to an older table). */
export const ADDED_INBOX_COLUMNS: ReadonlyArray<[string, string]> = [
  ['failed_at', 'timestamptz'],
  ['retried_at', 'timestamptz'],
  ['retried_attempts', 'integer NOT NULL DEFAULT 0'],
]

/** The SQL that adds the columns of `missing` to the inbox table of `table`. */
export function postgresInboxUpgradeSql(table: string, missing: ReadonlyArray<[string, string]>): string {
  return missing.map(([name, definition]) => `ALTER TABLE ${table}_inbox ADD COLUMN IF NOT EXISTS ${name} ${definition};`).join('\n')
}

/** The statements of the inbox (parameters in each one's comment). */
export interface PostgresInboxSql {
  /** $1 key, $2 type, $3 payload, $4 timestamp, $5 order key, $6 created_at ms: one row when queued. */
  enqueue: string
  /** $1 token, $2 lease ms: the taken row, with its attempts. */
  take: string
  /** As `take`, keeping the entries of one order key in order. */
  takeOrdered: string
  /** $1 key, $2 token, $3 retention ms. */
  finish: string
  /** $1 key, $2 token, $3 error, $4 retry in ms: one row, `n` = 1 when it held. */
  failRetry: string
  /** $1 key, $2 token, $3 error. */
  failDead: string
  /** $1 key, $2 token, $3 retry in ms: one row, `n` = 1 when it held. */
  defer: string
  /** $1 key, $2 token, $3 lease ms: the lease now ends then. */
  renew: string
  /** $1 state or null, $2 limit. */
  list: string
  /** $1 key. */
  get: string
  /** $1 keys (text[], at most RETRY_KEYS of them). */
  retry: string
  /**
   * Every dead entry among the first INBOX_CHUNK keys ([0], $1 null) or the next after key $1 ([1]):
   * one row, `last` the last key seen (null: none left) and `n` retried.
   */
  retryAll: [string, string]
  /** As `retryAll`, the dead entries that ended $2 ms ago or more, deleted. */
  purge: [string, string]
  /** Counts by state through the due and dead indexes (with a valid `<table>_inbox_dead`). */
  stats: string
  /** The same counts in one pass over the table (without that index: two passes would each read the table). */
  statsOnePass: string
  /** One row, `valid`: `<table>_inbox_dead` is there and valid (a failed CONCURRENTLY build leaves it invalid), or none. */
  deadIndex: string
  /** A batch delete of done entries past their retention (the store's purge runs it). */
  forget: string
}

/**
 * Keys an operator's statement over the whole inbox (`retry('dead')`, `purge`) covers at once,
 * walking the table in key order: each statement stays well inside the server-side
 * `statement_timeout` however many entries there are. One statement over 600,000 dead entries took
 * 10.7 s here, and was rolled back at the limit every time; in chunks of 20,000 keys, 300,000 dead
 * entries of 800-byte payloads were retried in 13.6 s, about 0.9 s a chunk on a busy machine, so
 * chunks are half that.
 */
export const INBOX_CHUNK = 10_000
/** Keys one `retry(keys)` statement takes. */
export const RETRY_KEYS = 1_000

/**
 * The first INBOX_CHUNK keys of inbox table `t` ($1 null), or the next after key $1 (`after`), as CTE
 * `chunk`: two statements, as one with `$1 IS NULL OR key > $1` would be planned once for both and
 * lose the index range (every chunk would walk the keys from the first).
 */
const chunkOf = (t: string, after: boolean) =>
  `chunk AS (SELECT key FROM ${t} WHERE ${after ? 'key > $1' : '$1::text IS NULL'} ORDER BY key LIMIT ${INBOX_CHUNK})`
/** A statement over the whole table, chunk by chunk (`over`: its CTEs after `chunk`, then its SELECT): the first chunk's and the next ones'. */
const chunked = (t: string, over: string): [string, string] => [`WITH ${chunkOf(t, false)},\n${over}`, `WITH ${chunkOf(t, true)},\n${over}`]
/**
 * The rows of the chunk, as a range of the primary key: a join with `chunk` was often planned as a
 * hash join over a scan of the whole table (every chunk then cost the whole table: 65 s to retry
 * 20,000 dead entries among 2 million, against 1.8 s as a range).
 */
const IN_CHUNK = `i.key >= (SELECT min(key) FROM chunk) AND i.key <= (SELECT max(key) FROM chunk)`

/** SQL of now() + `param` ms. */
const after = (param: string) => `now() + ${param}::float8 * interval '1 millisecond'`
/** A timestamptz as whole ms since the epoch (float8: pg returns bigint as text). */
const ms = (column: string) => `floor(extract(epoch FROM ${column}) * 1000)::float8`
/** A running entry whose lease lapsed is pending. */
const LAPSED = `(state = 'running' AND next_attempt_at <= now())`
const SHOWN_STATE = `CASE WHEN ${LAPSED} THEN 'pending' ELSE state END`
const ITEM = 'key, type, payload, timestamp::float8 AS timestamp, order_key, created_at_ms::float8 AS created_at_ms'
const ENTRY = `${ITEM}, ${SHOWN_STATE} AS state, attempts, ${ms('enqueued_at')} AS enqueued_at, ${ms('next_attempt_at')} AS next_attempt_at,
  last_error, ${ms('ended_at')} AS ended_at, ${ms('failed_at')} AS failed_at, ${ms('retried_at')} AS retried_at, retried_attempts`
/** A dead entry made pending again: it keeps what it went through, the attempts it had and when it was retried. */
const RETRIED = `state = 'pending', retried_attempts = retried_attempts + attempts, attempts = 0, retried_at = now(),
  next_attempt_at = now(), ended_at = NULL`
/** Done entries past their retention are forgotten, even before the purge deletes them. */
const REMEMBERED = `NOT (state = 'done' AND expires_at <= now())`
/** The lease of token $2 holds entry $1: running with that token, not lapsed. */
const HELD = `key = $1 AND token = $2 AND state = 'running' AND next_attempt_at > now()`
/**
 * Commits without waiting for its WAL flush, whatever the session says (the next flushed commit,
 * such as the worker's dedup claim, carries it to disk). A take, finish, failure or defer lost in a
 * crash of the server leaves the entry pending or running-then-lapsed: it is taken again and the
 * dedup claim finds its event done. Referenced in FROM, or PostgreSQL would not run it.
 */
const LAZY = `lazy AS (SELECT set_config('synchronous_commit', 'off', true))`
/** A lazily committed update of the entry the lease holds. */
const held = (t: string, set: string) => `WITH ${LAZY} UPDATE ${t} SET ${set} FROM lazy WHERE ${HELD}`

/** The take: the due entry with the oldest `next_attempt_at` (`also`: the ordered rule), locked, skipping entries others lock. */
function take(t: string, also: string): string {
  return `WITH ${LAZY}, next AS (
  SELECT e.key FROM ${t} e WHERE e.state IN ('pending', 'running') AND e.next_attempt_at <= now()${also}
  ORDER BY e.next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED)
UPDATE ${t} i SET state = 'running', attempts = i.attempts + 1, token = $1, next_attempt_at = ${after('$2')}
FROM next, lazy WHERE i.key = next.key
RETURNING i.key, i.type, i.payload, i.timestamp::float8 AS timestamp, i.order_key, i.created_at_ms::float8 AS created_at_ms, i.attempts`
}

/**
 * A pending entry that waits for a retry holds back the later entries of its order key (its email):
 * an ordered take would skip them all, one by one, while they are due. So when an entry is made to
 * wait (failed, deferred) its key's other pending entries wait as long, and an entry queued behind a
 * waiting head waits for it: they are not due before it, and the take's range never holds them.
 * (It only delays what the ordered rule would not take anyway; the take still checks the rule.)
 */
function waitingBehind(t: string, changed: string): string {
  return `held_back AS (UPDATE ${t} f SET next_attempt_at = ${changed}.next_attempt_at FROM ${changed}
  WHERE ${changed}.order_key IS NOT NULL AND f.order_key = ${changed}.order_key AND f.state = 'pending' AND f.key <> ${changed}.key
  AND f.next_attempt_at < ${changed}.next_attempt_at)`
}

/** Builds the inbox statements of `table`. */
export function postgresInboxSql(table: string): PostgresInboxSql {
  const t = `${table}_inbox`
  // Another entry of its order key runs (a live lease), or an older one (by created_at, then key) waits or runs.
  const ordered = `
  AND (e.order_key IS NULL OR NOT EXISTS (
    SELECT 1 FROM ${t} o WHERE o.order_key = e.order_key AND o.state IN ('pending', 'running') AND o.key <> e.key
    AND ((o.state = 'running' AND o.next_attempt_at > now())
      OR (coalesce(o.created_at_ms, 0), o.key) < (coalesce(e.created_at_ms, 0), e.key))))`
  const pending = `state = 'pending', token = NULL`
  /** An update of the held entry that makes it wait, its email's other pending entries with it; one row `n` = 1 when it held. */
  const waiting = (set: string) => `WITH ${LAZY}, changed AS (
  UPDATE ${t} SET ${set} FROM lazy WHERE ${HELD} RETURNING key, order_key, next_attempt_at),
${waitingBehind(t, 'changed')}
SELECT count(*)::int AS n FROM changed`
  // The head of order key $5 (its oldest unfinished entry), while it waits for a retry: a new entry behind it waits as long.
  const headWait = `(SELECT CASE WHEN h.state = 'pending' THEN h.next_attempt_at END FROM ${t} h
  WHERE $5::text IS NOT NULL AND h.order_key = $5 AND h.state IN ('pending', 'running') ORDER BY h.created_at_ms, h.key LIMIT 1)`
  return {
    // synchronous_commit on for this transaction: queued means flushed to the WAL, whatever the
    // role or session says. A done entry past its retention is forgotten: its key is queued again.
    enqueue: `WITH durable AS (SELECT set_config('synchronous_commit', 'on', true))
INSERT INTO ${t} AS i (key, type, payload, timestamp, order_key, created_at_ms, state, attempts, enqueued_at, next_attempt_at)
SELECT $1, $2, $3, $4, $5, $6, 'pending', 0, now(), greatest(now(), ${headWait}) FROM durable
ON CONFLICT (key) DO UPDATE SET type = excluded.type, payload = excluded.payload, timestamp = excluded.timestamp,
  order_key = excluded.order_key, created_at_ms = excluded.created_at_ms, state = 'pending', attempts = 0,
  enqueued_at = excluded.enqueued_at, next_attempt_at = excluded.next_attempt_at, token = NULL, last_error = NULL,
  ended_at = NULL, expires_at = NULL, failed_at = NULL, retried_at = NULL, retried_attempts = 0
WHERE i.state = 'done' AND i.expires_at <= now()`,
    take: take(t, ''),
    takeOrdered: take(t, ordered),
    finish: held(t, `state = 'done', token = NULL, ended_at = now(), expires_at = ${after('$3')}`),
    failRetry: waiting(`${pending}, last_error = $3, failed_at = now(), next_attempt_at = ${after('$4')}`),
    failDead: held(t, `state = 'dead', token = NULL, last_error = $3, failed_at = now(), ended_at = now()`),
    defer: waiting(`${pending}, attempts = attempts - 1, next_attempt_at = ${after('$3')}`),
    renew: held(t, `next_attempt_at = ${after('$3')}`),
    list: `SELECT ${ENTRY} FROM ${t} WHERE ${REMEMBERED} AND ($1::text IS NULL OR ${SHOWN_STATE} = $1::text)
ORDER BY enqueued_at, key LIMIT $2`,
    get: `SELECT ${ENTRY} FROM ${t} WHERE key = $1 AND ${REMEMBERED}`,
    // A retried entry keeps what it went through: the attempts it had, and when it was retried.
    retry: `UPDATE ${t} SET ${RETRIED} WHERE state = 'dead' AND key = ANY($1::text[])`,
    retryAll: chunked(
      t,
      `changed AS (UPDATE ${t} i SET ${RETRIED} WHERE ${IN_CHUNK} AND i.state = 'dead' RETURNING 1)
SELECT (SELECT max(key) FROM chunk) AS last, (SELECT count(*) FROM changed)::int AS n`,
    ),
    purge: chunked(
      t,
      `gone AS (DELETE FROM ${t} i WHERE ${IN_CHUNK} AND i.state = 'dead'
  AND i.ended_at <= now() - $2::float8 * interval '1 millisecond' RETURNING 1)
SELECT (SELECT max(key) FROM chunk) AS last, (SELECT count(*) FROM gone)::int AS n`,
    ),
    // Two parts, each over its partial index (due: pending and running; dead): not the done
    // entries, which a week's retention makes most of the table (the one pass over every row took
    // 2.6 s at 10 million entries, and met the statement limit 3 times in 5). With a backlog of
    // hundreds of thousands the planner may still scan the table for the first part.
    stats: `SELECT w.pending, w.running, d.dead, w.oldest FROM
  (SELECT count(*) FILTER (WHERE state = 'pending' OR ${LAPSED})::int AS pending,
    count(*) FILTER (WHERE state = 'running' AND NOT ${LAPSED})::int AS running,
    ${ms(`min(enqueued_at) FILTER (WHERE state = 'pending' OR ${LAPSED})`)} AS oldest
  FROM ${t} WHERE state IN ('pending', 'running')) w,
  (SELECT count(*)::int AS dead FROM ${t} WHERE state = 'dead') d`,
    statsOnePass: `SELECT count(*) FILTER (WHERE state = 'pending' OR ${LAPSED})::int AS pending,
  count(*) FILTER (WHERE state = 'running' AND NOT ${LAPSED})::int AS running,
  count(*) FILTER (WHERE state = 'dead')::int AS dead,
  ${ms(`min(enqueued_at) FILTER (WHERE state = 'pending' OR ${LAPSED})`)} AS oldest
FROM ${t} WHERE state IN ('pending', 'running', 'dead')`,
    deadIndex: `SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass('${t}_dead')`,
    forget: purgeBatch(t, 'now()', `state = 'done'`),
  }
}

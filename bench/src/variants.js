/**
 * The HTTP variants: our adapter (`framework` + server `mode`, see server.js) measured against its
 * `main` baseline (the hand-written receiver with the same kind of dedup, issue 34: the ratio that
 * counts) and, for information, its `info` baseline (the bare framework). Variants about the cost
 * of one option (ordering, inbox mode) have our own server without it as `main` and no `info`.
 * `kind` is the pool ours and the main baseline get (the bare framework always gets distinct
 * events); `connections` defaults to 10.
 */

/** What each baseline server is, by `framework mode`. */
export const BASELINE_LABELS = {
  'express bare': 'Express 5 bare (express.raw → 200)',
  'express lean': 'Express 5 lean bare (body read by hand → res.end)',
  'hono bare': 'Hono on @hono/node-server bare (arrayBuffer → 200)',
  'express hand-memory': 'hand-written, Map',
  'express hand-sqlite': 'hand-written, SQLite group commit',
  'express hand-postgres': 'hand-written, PostgreSQL SELECT + INSERT',
  'express hand-redis': 'hand-written, Redis GET + SET NX',
  'hono hand-memory': 'hand-written, Map',
  'hono hand-sqlite': 'hand-written, SQLite group commit',
  'hono hand-postgres': 'hand-written, PostgreSQL SELECT + INSERT',
  'hono hand-redis': 'hand-written, Redis GET + SET NX',
  'hono memory': 'ours, memory store, ordering off',
  'hono memory-otel-off': 'ours, memory store, telemetry: false',
  'hono memory-twin': 'ours, memory store, ordering off (a second process)',
  'hono postgres': 'ours, PostgreSQL, request mode',
  'hono sqlite': 'ours, SQLite, request mode, ordering off',
  'express sqlite': 'ours, SQLite, ordering off',
}

const variant = (id, framework, mode, label, more = {}) => ({
  id,
  framework,
  mode,
  kind: 'distinct',
  label,
  main: `hand-${mode}`,
  info: 'bare',
  ...more,
})

export const HTTP_VARIANTS = [
  variant('express-memory', 'express', 'memory', 'Express 5 + memory store'),
  // Information, not a target: the leanest Express route (body read by hand, res.end) instead of
  // express.raw + res.json, which cost more than our adapter's own reading and answer.
  variant('express-memory-lean', 'express', 'memory', 'Express 5 + memory store vs a lean bare route (body read by hand, res.end)', {
    main: 'lean',
    info: undefined,
  }),
  variant('express-sqlite', 'express', 'sqlite', 'Express 5 + default SQLite store'),
  variant('express-sqlite-dup', 'express', 'sqlite', 'Express 5 + SQLite, 50 % duplicates', { kind: 'duplicates' }),
  variant('express-postgres', 'express', 'postgres', 'Express 5 + PostgresDedupStore'),
  variant('express-redis', 'express', 'redis', 'Express 5 + RedisDedupStore (AOF, appendfsync always)'),
  variant('hono-memory', 'hono', 'memory', 'Hono (node-server) + memory store'),
  variant('hono-sqlite', 'hono', 'sqlite', 'Hono (node-server) + default SQLite store'),
  variant('hono-sqlite-dup', 'hono', 'sqlite', 'Hono (node-server) + SQLite, 50 % duplicates', { kind: 'duplicates' }),
  // More connections: more events share each WAL sync (group commit), ours and the hand-written alike.
  variant('hono-sqlite-c50', 'hono', 'sqlite', 'Hono + SQLite, 50 connections', { connections: 50 }),
  variant('hono-sqlite-c100', 'hono', 'sqlite', 'Hono + SQLite, 100 connections', { connections: 100 }),
  variant('hono-postgres', 'hono', 'postgres', 'Hono (node-server) + PostgresDedupStore'),
  variant('hono-redis', 'hono', 'redis', 'Hono (node-server) + RedisDedupStore (AOF, appendfsync always)'),
  // The cost of ordering: the same adapter and store with `ordering: true`, against ordering off.
  // Every event is of a new email: each writes a mark and a lock.
  variant('hono-memory-ordering', 'hono', 'memory-ordered', 'Hono + memory store, ordering: true vs off', {
    main: 'memory',
    info: undefined,
  }),
  variant('hono-sqlite-ordering', 'hono', 'sqlite-ordered', 'Hono + SQLite, ordering: true vs off', { main: 'sqlite', info: undefined }),
  variant('express-sqlite-ordering', 'express', 'sqlite-ordered', 'Express 5 + SQLite, ordering: true vs off', {
    main: 'sqlite',
    info: undefined,
  }),
  // The cost of telemetry (issue 36): @opentelemetry/api is installed with core, so every variant
  // above runs with the API and no SDK; against `telemetry: false`, then with an SDK registered.
  variant('hono-memory-otel', 'hono', 'memory', 'Hono + memory store, @opentelemetry/api without an SDK vs telemetry: false', {
    main: 'memory-otel-off',
    info: undefined,
  }),
  // A/A: two identical servers (memory store, API without an SDK), each in its own process, paired
  // like the variants above. Its ratio is how far apart two processes of the same code land: a
  // cost variant's ratio inside that spread is not a cost.
  variant('hono-memory-twin', 'hono', 'memory', 'Hono + memory store vs the same server in another process (A/A)', {
    main: 'memory-twin',
    info: undefined,
  }),
  variant('hono-memory-otel-sdk', 'hono', 'memory-otel-sdk', 'Hono + memory store, OpenTelemetry SDK registered vs no SDK', {
    main: 'memory',
    info: undefined,
  }),
  // Inbox mode (issue 35): 2xx once the event is in the SQLite inbox, handlers after the answer;
  // against request mode on the same store. `-web` runs no worker: the web tier alone.
  variant('hono-sqlite-inbox', 'hono', 'sqlite-inbox', "Hono + SQLite, mode: 'inbox' (worker in process) vs request mode", {
    main: 'sqlite',
    info: undefined,
  }),
  variant('hono-postgres-inbox', 'hono', 'postgres-inbox', "Hono + PostgreSQL, mode: 'inbox' (worker in process) vs request mode", {
    main: 'postgres',
    info: undefined,
  }),
  variant('hono-sqlite-inbox-web', 'hono', 'sqlite-inbox-web', "Hono + SQLite, mode: 'inbox', worker: false (web tier) vs request mode", {
    main: 'sqlite',
    info: undefined,
  }),
]

/** The database server a mode talks to, if any (its CPU is measured from outside). */
export function serviceOf(mode) {
  if (mode.includes('postgres')) return 'postgres'
  if (mode.includes('redis')) return 'redis'
  return undefined
}

/** Whether a main baseline is the hand-written receiver (the issue-34 targets apply). */
export const isHand = (mode) => mode?.startsWith('hand-') === true

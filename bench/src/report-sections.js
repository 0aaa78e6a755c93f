/**
 * The Markdown of bench/RESULTS.md: targets, HTTP, SQLite by connections, inbox mode, many
 * instances, every round, verification and stores. Nothing here measures.
 */
import { formatMicros, formatRatio } from './harness.js'
import { HTTP_HEADER, httpRows, ms, ROUND_HEADER, rate, roundRows, table, us } from './report.js'
import { STORE_CONCURRENCY, STORE_KINDS } from './stores.js'

/** ours and the hand-written receiver on SQLite at each connection count (hono-sqlite, -c50, -c100). */
function connectionsSection(summaries) {
  const rows = summaries.filter((s) => s.framework === 'hono' && s.mode === 'sqlite' && s.kind === 'distinct')
  if (rows.length === 0) return []
  return [
    '## Durable SQLite by connections (Hono)',
    '',
    'More connections put more events in each WAL sync, ours (group commit in the store) and the hand-written receiver (one transaction per event-loop turn) alike. CPU is the server process per event.',
    '',
    table(
      [
        'Connections',
        'req/s hand-written → ours',
        'ratio',
        'CPU/event hand-written / ours',
        'CPU ratio',
        'p99 hand-written / ours',
        'vs bare Hono (ours)',
      ],
      rows.map((s) => [
        String(s.connections),
        `${rate(s.main.perSecond)} → ${rate(s.ours.perSecond)}`,
        formatRatio(s.main.ratio),
        `${us(s.main.cpuUs)} / ${us(s.ours.cpuUs)}`,
        formatRatio(s.main.cpuRatio),
        `${ms(s.main.p99Us)} / ${ms(s.ours.p99Us)}`,
        s.info ? formatRatio(s.info.ratio) : '—',
      ]),
    ),
    '',
  ]
}

function inboxSection(summaries, worker) {
  const rows = summaries.filter((s) => s.mode.includes('inbox'))
  if (rows.length === 0 && !worker) return []
  const parts = ['## Inbox mode (issue 35, SQLite)', '']
  if (rows.length > 0) {
    parts.push(
      "Answer latency and throughput of `mode: 'inbox'` (2xx once the event is in the durable inbox) against request mode on the same store (2xx after the handler and the record). With the worker in process its CPU is the server's too; the backlog is what it had not handled when a round ended (its CPU after the round is not counted).",
      '',
      table(
        [
          'Variant',
          'req/s request mode → inbox',
          'ratio',
          'p50 request / inbox',
          'p99 request / inbox',
          'CPU/req request / inbox',
          'worker backlog at round end (max)',
        ],
        rows.map((s) => [
          s.label,
          `${rate(s.main.perSecond)} → ${rate(s.ours.perSecond)}`,
          formatRatio(s.main.ratio),
          `${ms(s.main.p50Us)} / ${ms(s.ours.p50Us)}`,
          `${ms(s.main.p99Us)} / ${ms(s.ours.p99Us)}`,
          `${us(s.main.cpuUs)} / ${us(s.ours.cpuUs)}`,
          s.backlogMax === undefined ? '—' : rate(s.backlogMax),
        ]),
      ),
      '',
    )
  }
  if (worker) {
    parts.push(
      `Worker throughput: ${rate(worker[0].events)} signed events recorded through \`receiver.receive\` (10 in flight, \`inbox: { worker: false }\`) in a fresh SQLite file (durability \`full\`) or a fresh table of the run's PostgreSQL, then drained by the worker (\`inbox.start()\` until every handler ran and \`inbox.stats()\` is empty, or \`inbox.work()\` one at a time). One process, unpinned; CPU is the process's per event (not PostgreSQL's own).`,
      '',
      table(
        ['Store', 'Worker', 'enqueue events/s', 'enqueue CPU/event', 'drain events/s', 'drain CPU/event'],
        worker.map((r) => [
          r.store,
          r.mode,
          rate(r.enqueue.perSecond),
          us(r.enqueue.cpuPerEventUs),
          rate(r.worker.perSecond),
          us(r.worker.cpuPerEventUs),
        ]),
      ),
      '',
    )
  }
  return parts
}

function multiSection(multi) {
  if (!multi?.length) return []
  const first = multi[0]
  const side = (name, s) => [
    name,
    rate(s.perSecond),
    us(s.cpuPerEventUs),
    us(s.dbCpuPerEventUs),
    `${rate(s.acked)}: ${rate(s.runsOnce)} once, **${rate(s.runsTwice)} more than once**, ${rate(s.runsNever)} never`,
    rate(s.runsUnacked),
    rate(s.inFlight),
    `${s.otherNon2xx} / ${s.errors}`,
    `${ms(s.p50Us)} / ${ms(s.p99Us)}`,
  ]
  return [
    '## Many instances (shared PostgreSQL, shared Redis)',
    '',
    `${first.instances} receiver processes (${first.framework === 'hono' ? 'Hono' : 'Express'}) on the server core, ${first.connections} connections to each; every event sent to two of them (copies ${first.lag === 0 ? 'at about the same moment' : `${first.lag} requests apart`}). Durable events/s counts events with at least one 2xx; handler runs come from each process's journal of the event ids its handler ran (exactly once is right); 409 is a copy refused while the other copy runs (the sender would retry it and get a duplicate 200). CPU per event is the three receivers together, and the database server's processes apart (/proc, 10 ms ticks).`,
    '',
    table(
      [
        'Store',
        'Receiver',
        'durable events/s',
        'receivers CPU/event',
        'DB server CPU/event',
        'acknowledged events: handler ran',
        'runs of unacknowledged events',
        '409 in flight',
        'other non-2xx / errors',
        'p50 / p99',
      ],
      multi.flatMap((m) => [
        [m.store, ...side('hand-written', m.hand)],
        [m.store, ...side(`ours (${formatRatio(m.ratio)})`, m.ours)],
      ]),
    ),
    '',
  ]
}

function verifySection(verify) {
  if (!verify) return []
  const sizes = [...new Set(verify.rows.map((r) => r.size))]
  const at = (size, name) => verify.rows.find((r) => r.size === size && r.name === name)?.nsPerOp
  return [
    '## Verification (median µs per call, cases interleaved in rounds; ratio to the hand-written node:crypto baseline)',
    '',
    'Each library verifies its own signature format over the same body bytes. standardwebhooks, svix and',
    "stripe's `constructEvent` also parse the JSON; `verifyWebhook + parseEnvelope` is the like-for-like row.",
    '',
    table(
      ['Body', 'Implementation', 'Time', 'vs hand-written'],
      verify.rows.map((r) => [r.size, r.name, formatMicros(r.nsPerOp), formatRatio(r.vsHand)]),
    ),
    '',
    'Peer libraries (information): how many times slower than `verifyWebhook`',
    '',
    table(
      ['Peer', ...sizes],
      ['standardwebhooks', 'svix', 'stripe'].map((peer) => [peer, ...sizes.map((s) => formatRatio(at(s, peer) / at(s, 'verifyWebhook')))]),
    ),
    '',
    'Refusals (2 KB body):',
    '',
    table(
      ['Case', 'Time'],
      verify.reject.map((r) => [r.name, formatMicros(r.nsPerOp)]),
    ),
    '',
  ]
}

/** How everything was measured, with this run's settings. */
export function methodText({ h, m, pinning }) {
  return [
    `- HTTP: each variant runs in ${h.rounds} interleaved rounds of ${h.seconds} s with its baselines (bare framework, hand-written, ours, bare, hand-written, ours, …) after a ${h.warmupSeconds} s warm-up of each server. The main baseline is the **hand-written minimal correct receiver** with the same kind of dedup (bench/src/hand: HMAC-SHA256 + \`timingSafeEqual\`, the ±300 s window, \`JSON.parse\`, then a Map, SQLite WAL \`synchronous=FULL\` with one commit per event-loop turn, PostgreSQL SELECT + \`INSERT … ON CONFLICT DO NOTHING\` on a pool of 10, or Redis GET + \`SET NX PX\`; 2xx only after the record); the bare framework (the same framework answering 200 after reading the raw body) is information. Ratios are medians of the rounds' ratios; p50/p99 and CPU medians of the rounds. Variants about one option (ordering, inbox mode) are measured against our own server without it.`,
    `- Load: 10 keep-alive connections (50 and 100 where the variant says) in a closed loop over raw sockets, each request a distinct ~1 KB \`email.queued\` event from a pool signed before the round (never in the loop) and larger than the round can send; the 50 % duplicates pool holds every event twice, the copy 1,000 requests after the original (the hand-written baseline gets the same pool). Every answer's status is checked; a round with a non-2xx or a socket error is flagged.`,
    `- Cores: ${pinning.note}. Server CPU per request is the server's \`process.cpuUsage()\` (all its threads) across the round divided by the requests it received, read over IPC between rounds (untimed). PostgreSQL and Redis run outside that process, unpinned: their CPU (all their processes, /proc, 10 ms ticks) across the same round is the DB column. PostgreSQL 15 with its defaults (\`fsync\` and \`synchronous_commit\` on); Redis 7 with \`appendonly yes\` and \`appendfsync always\` (every write on disk before Redis answers), both on the same disk as the SQLite files.`,
    `- Cross-check: after its rounds each variant runs one more pair (main baseline, ours) with autocannon sending a fixed count from the same kind of pool, timed end to end; the ratios agree when they differ by at most 0.1.`,
    `- Many instances: ${m.rounds} interleaved rounds of ${m.seconds} s per store (hand-written, ours, …); see its section.`,
    '- Verification: each case runs in rounds interleaved with the others of its body size; the figure is the median round. Stores: claim + complete of fresh random-UUID keys, best of the rounds.',
  ].join('\n')
}

/** The dedup stores' table. */
export function storeSection(stores, rounds) {
  if (!stores) return ''
  return `## Dedup stores (claim + complete per second, fresh random-UUID keys, best of ${rounds})\n\n${table(
    ['Store', ...STORE_CONCURRENCY.map((c) => `${c} in flight`)],
    STORE_KINDS.map((kind) => [
      kind.name,
      ...STORE_CONCURRENCY.map(
        (c) => `${Math.round(stores.find((r) => r.store === kind.name && r.concurrency === c).perSecond).toLocaleString('en-US')}/s`,
      ),
    ]),
  )}`
}

/** The Markdown of bench/RESULTS.md. */
export function resultsMarkdown({ title, header, method, targetRows, verify, stores: storeText, summaries, worker, multi, smoke, noisy }) {
  const parts = [`# ${title}`, '']
  if (smoke) parts.push('> Smoke run: durations far too short for real figures.', '')
  parts.push(header, '', '## Method', '', method, '', '## Targets (DESIGN.md performance budget, issue 34)', '')
  if (noisy)
    parts.push("> Other processes used the server's core during this run: these verdicts are not reliable. Rerun on a quiet machine.", '')
  parts.push(table(['Target', 'Measured', 'Result', 'Cross-check (autocannon)'], targetRows), '')
  parts.push(
    'Against the bare framework a durable receiver is bounded by the disk (hand-written too): those ratios are information, in the HTTP table.',
    'Targets not met: where the time goes, step by step: [profile/README.md](profile/README.md).',
    '',
  )
  if (summaries.length > 0) parts.push('## HTTP', '', table(HTTP_HEADER, httpRows(summaries)), '')
  parts.push(...connectionsSection(summaries), ...inboxSection(summaries, worker), ...multiSection(multi))
  if (summaries.length > 0) parts.push('## Every HTTP round', '', table(ROUND_HEADER, roundRows(summaries)), '')
  parts.push(...verifySection(verify))
  if (storeText) parts.push(storeText, '')
  return `${parts.join('\n')}\n`
}

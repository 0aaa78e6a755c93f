/**
 * The benchmark suite, one command: `pnpm bench` (from the repository root; builds first).
 *
 *   node bench/src/run.js              full run; writes bench/RESULTS.md
 *   node bench/src/run.js --quick      short rounds (2 s) for a developer's check; writes nothing unless --out
 *   node bench/src/run.js --smoke      every benchmark with tiny durations (the smoke test); writes nothing unless --out
 *   --only LIST    comma-separated sections (verify, stores, http, multi, inbox) and/or HTTP variants by id
 *                  or prefix (variants.js; `hono` = all Hono variants). Variants alone run only HTTP.
 *   --rounds N --seconds S    HTTP rounds per variant and seconds per round (also BENCH_ROUNDS, BENCH_SECONDS)
 *   --copy-lag N   many instances: requests between an event's two copies (default 0: sent together)
 *   --out FILE     where to write the Markdown; --json FILE   the raw figures as JSON
 *
 * Every figure comes from this one run on this machine; ratios are computed within the run.
 * Nothing here asserts a speed: targets are reported as met or not, next to the figure.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { formatMicros, formatRatio } from './harness.js'
import { HTTP_VARIANTS, runHttpBench } from './http.js'
import { runInboxWorkerBench } from './inbox.js'
import { runMultiBench } from './multi.js'
import { detectPinning } from './pinning.js'
import { compareRuns, formatRegressions, machineShift } from './regress.js'
import { HTTP_HEADER, httpRows, table, targets } from './report.js'
import { methodText, resultsMarkdown, storeSection } from './report-sections.js'
import { lazyServices } from './services.js'
import { runStoreBench } from './stores.js'
import { runVerifyBench } from './verify.js'

const benchDir = fileURLToPath(new URL('..', import.meta.url))
const { values: args } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    rounds: { type: 'string' },
    seconds: { type: 'string' },
    out: { type: 'string' },
    json: { type: 'string' },
    'copy-lag': { type: 'string' },
    previous: { type: 'string' },
  },
})

const PROFILES = {
  full: {
    verify: { roundMs: 150, rounds: 5 },
    stores: { events: 3_000, rounds: 3 },
    http: { rounds: 3, seconds: 4, warmupSeconds: 2, crossSeconds: 3 },
    multi: { rounds: 3, seconds: 4, warmupSeconds: 1 },
    inbox: { events: 5_000 },
  },
  quick: {
    verify: { roundMs: 40, rounds: 5 },
    stores: { events: 1_000, rounds: 1 },
    http: { rounds: 3, seconds: 2, warmupSeconds: 1, crossSeconds: 1.5 },
    multi: { rounds: 2, seconds: 2, warmupSeconds: 0.5 },
    inbox: { events: 2_000 },
  },
  smoke: {
    verify: { roundMs: 1, rounds: 1 },
    stores: { events: 50, rounds: 1 },
    http: { rounds: 1, seconds: 5, warmupSeconds: 0, crossSeconds: 1, crossOnce: true, maxPool: 100 },
    multi: { rounds: 1, seconds: 5, warmupSeconds: 0, maxEvents: 150 },
    inbox: { events: 60 },
  },
}
const profile = args.smoke ? 'smoke' : args.quick ? 'quick' : 'full'
const config = structuredClone(PROFILES[profile])
const roundsOverride = args.rounds ?? process.env.BENCH_ROUNDS
const secondsOverride = args.seconds ?? process.env.BENCH_SECONDS
if (roundsOverride) config.http.rounds = Math.max(1, Number.parseInt(roundsOverride, 10))
if (secondsOverride) config.http.seconds = Number(secondsOverride)

const tokens = (args.only ?? '')
  .split(',')
  .map((t) => t.trim())
  .filter(Boolean)
const SECTIONS = ['verify', 'stores', 'http', 'multi', 'inbox']
const sectionTokens = tokens.filter((t) => SECTIONS.includes(t))
const variantTokens = tokens.filter((t) => !sectionTokens.includes(t))
// A token is a prefix of variant ids, or with a leading `=` one id exactly (`=hono-memory`: not its -ordering, -otel …).
const variants = HTTP_VARIANTS.filter(
  (v) => variantTokens.length === 0 || variantTokens.some((t) => (t.startsWith('=') ? v.id === t.slice(1) : v.id.startsWith(t))),
)
if (variantTokens.length > 0 && variants.length === 0) {
  console.error(`--only: no HTTP variant matches ${variantTokens.join(', ')}; ids: ${HTTP_VARIANTS.map((v) => v.id).join(', ')}`)
  process.exit(2)
}
const runs = (section) => tokens.length === 0 || sectionTokens.includes(section) || (section === 'http' && variantTokens.length > 0)
const partial = tokens.length > 0 || profile !== 'full' || roundsOverride || secondsOverride

function log(line) {
  process.stdout.write(`${line}\n`)
}
function version(name) {
  return JSON.parse(readFileSync(join(benchDir, 'node_modules', name, 'package.json'), 'utf8')).version
}

/** Other processes may use at most this share of the server's core in a round for the run to count as quiet. */
const QUIET = 0.1
const started = new Date()
const startLoad = loadavg()
const pinning = detectPinning()
log(`# email-webhooks benchmarks (${profile}${tokens.length ? `, only ${tokens.join(',')}` : ''})`)

let verify
if (runs('verify')) {
  log('\n## Verification (cases interleaved in rounds, medians)')
  verify = await runVerifyBench(config.verify)
  for (const row of verify.rows)
    log(`${row.size.padEnd(6)} ${row.name.padEnd(32)} ${formatMicros(row.nsPerOp).padStart(10)}  ${formatRatio(row.vsHand)} hand`)
  for (const row of verify.reject) log(`reject ${row.name.padEnd(44)} ${formatMicros(row.nsPerOp).padStart(10)}`)
}

let stores
if (runs('stores')) {
  log('\n## Stores (claim + complete per second)')
  stores = await runStoreBench(config.stores)
  for (const row of stores)
    log(
      `${row.store.padEnd(14)} concurrency ${String(row.concurrency).padStart(2)}  ${Math.round(row.perSecond).toLocaleString('en-US')}/s`,
    )
}

const services = lazyServices()
const side = (x) =>
  `${Math.round(x.perSecond)} req/s ${x.cpuPerRequestUs.toFixed(1)} µs/req${x.dbCpuPerRequestUs === undefined ? '' : ` + DB ${x.dbCpuPerRequestUs.toFixed(1)}`} (server ${Math.round(x.serverBusy * 100)} %, load ${Math.round(x.loadBusy * 100)} %, others ${x.others === undefined ? '?' : Math.round(x.others * 100)} %)`
let http = []
let multi
let worker
const h = config.http
try {
  if (runs('http')) {
    log(`\n## HTTP (${pinning.note}; ${h.rounds} interleaved rounds of ${h.seconds} s after ${h.warmupSeconds} s warm-up)`)
    http = await runHttpBench({
      pinning,
      services,
      variants,
      ...h,
      onRound: (variant, r, pair) => {
        const rows = [pair.info, pair.main, pair.variant].filter(Boolean)
        const trouble = rows.some((x) => x.flagged)
          ? `  ⚠ non-2xx ${rows.reduce((n, x) => n + x.non2xx, 0)}, errors ${rows.reduce((n, x) => n + x.errors, 0)}`
          : ''
        log(
          `${variant.id.padEnd(24)} round ${r + 1}: ${pair.info ? `bare ${side(pair.info)} | ` : ''}${variant.main} ${side(pair.main)} | ours ${side(pair.variant)} | ${formatRatio(pair.variant.perSecond / pair.main.perSecond)}${trouble}`,
        )
      },
    })
    log(`\n${table(HTTP_HEADER, httpRows(http))}`)
  }
  if (runs('multi')) {
    const lag = Number.parseInt(args['copy-lag'] ?? process.env.BENCH_COPY_LAG ?? '0', 10)
    log(`\n## Many instances (3 receivers, every event to two of them, copies ${lag} requests apart)`)
    multi = await runMultiBench({
      pinning,
      services,
      lag,
      ...config.multi,
      onRound: (store, r, hand, ours) => {
        const one = (x) =>
          `${Math.round(x.perSecond)} events/s, ${x.cpuPerEventUs.toFixed(1)} + DB ${x.dbCpuPerEventUs.toFixed(1)} µs/event, runs ${x.runs.perEvent.toFixed(3)}/event (${x.runs.twice} twice), 409 ${x.inFlight}${x.flagged ? ` ⚠ non-2xx ${x.otherNon2xx}, errors ${x.errors}` : ''}`
        log(`${store.padEnd(9)} round ${r + 1}: hand-written ${one(hand)} | ours ${one(ours)}`)
      },
    })
  }
  if (runs('inbox')) {
    log('\n## Inbox worker (SQLite, PostgreSQL)')
    worker = await runInboxWorkerBench({ ...config.inbox, postgresUrl: (await services.get('postgres')).url })
    for (const row of worker)
      log(
        `${row.store.padEnd(10)} ${row.mode.padEnd(24)} enqueue ${Math.round(row.enqueue.perSecond)}/s ${row.enqueue.cpuPerEventUs.toFixed(1)} µs/event${row.enqueue.retried ? ` (${row.enqueue.retried} answers 503 sent again)` : ''} | drain ${Math.round(row.worker.perSecond)}/s ${row.worker.cpuPerEventUs.toFixed(1)} µs/event`,
      )
  }
} finally {
  await services.stopAll()
}

const targetRows = targets(verify?.rows, http)
const measured = targetRows.filter((row) => row[1] !== 'not measured')
if (measured.length > 0) log(`\n## Targets\n${table(['Target', 'Measured', 'Result', 'Cross-check (autocannon)'], measured)}`)

const cpu = cpus()
const versions = [
  'express',
  'hono',
  '@hono/node-server',
  'better-sqlite3',
  'pg',
  'ioredis',
  'standardwebhooks',
  'svix',
  'stripe',
  'autocannon',
]
  .map((name) => `${name} ${version(name)}`)
  .join(', ')
const ours = ['@email-webhooks/core', '@email-webhooks/express', '@email-webhooks/hono']
  .map((name) => `${name} ${version(name)}`)
  .join(', ')
const endLoad = loadavg()
const othersMax = Math.max(0, ...http.map((row) => row.othersMax))
const quiet = othersMax <= QUIET ? 'The machine was quiet: other processes used at most' : '**Noisy run**: other processes used up to'
const header = [
  `Measured ${started.toISOString().replace('T', ' ').slice(0, 16)} UTC on ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${process.platform} ${process.arch}; load average ${startLoad[0].toFixed(2)} at start, ${endLoad[0].toFixed(2)} at end.`,
  `Node ${process.version}${verify ? `, crypto backend \`${verify.backend}\`` : ''}. Packages: ${ours} (this worktree's build); ${versions}.`,
  ...(http.length
    ? [`${quiet} ${Math.round(othersMax * 100)} % of the server's core during an HTTP round (quiet means ≤ ${QUIET * 100} %).`]
    : []),
  `Profile: ${profile}${tokens.length ? `, only ${tokens.join(',')}` : ''}; HTTP ${h.rounds} rounds of ${h.seconds} s per variant.`,
  `Reproduce with \`npx -y pnpm@12 bench\` (about 20 minutes; \`node bench/src/run.js --quick --only hono-memory\` checks one variant in ~30 s).`,
].join('\n')
const markdown = resultsMarkdown({
  title: 'Benchmark results',
  header,
  method: methodText({ h, m: config.multi, pinning }),
  targetRows,
  verify,
  stores: storeSection(stores, config.stores.rounds),
  summaries: http,
  worker,
  multi,
  smoke: profile === 'smoke',
  noisy: http.length > 0 && othersMax > QUIET,
})

// Regression call-out (issue 48): every row against the same row of the previous full run on this
// machine (bench/last-run.json, which a full run rewrites; or --previous FILE, any earlier --json).
const LAST_RUN = join(benchDir, 'last-run.json')
const comparable = {
  started: started.toISOString(),
  rows: [
    ...http.map((row) => ({
      id: `http ${row.id}`,
      ratio: row.main.ratio,
      cpuRatio: row.main.totalCpuRatio,
      p99Ratio: row.main.p99Ratio,
      // A hand-written baseline's own CPU per request (no code of ours in it): how much the machine
      // moved between two runs (machineShift). Rows measured against ours have none.
      baselineCpuUs: row.main.mode.startsWith('hand-') ? row.main.cpuUs : undefined,
    })),
    // Ours only: a peer library getting slower is not a regression of ours.
    ...(verify?.rows ?? []).filter((row) => row.name === 'verifyWebhook').map((row) => ({ id: `verify ${row.size}`, vsHand: row.vsHand })),
  ],
}
const previousFile = args.previous ?? (existsSync(LAST_RUN) ? LAST_RUN : undefined)
let regressionLines = []
if (previousFile && profile !== 'smoke') {
  const previous = JSON.parse(readFileSync(previousFile, 'utf8'))
  const found = compareRuns(previous.comparable ?? previous, comparable, {
    higherIsBetter: ['ratio'],
    lowerIsBetter: ['cpuRatio', 'p99Ratio', 'vsHand'],
  })
  const shift = machineShift(previous.comparable ?? previous, comparable, 'baselineCpuUs', "the hand-written receivers' CPU per request")
  const when = previous.comparable?.started ?? previous.started
  const against = `${previousFile.replace(benchDir, 'bench/')}${when ? ` (${when.slice(0, 16).replace('T', ' ')} UTC)` : ''}`
  log(`\n${formatRegressions(found, against, false, shift).join('\n')}`)
  regressionLines = ['', '## Against the previous run', '', ...formatRegressions(found, against, true, shift), '']
}

const out = args.out ?? (partial ? undefined : join(benchDir, 'RESULTS.md'))
if (out) {
  writeFileSync(out, `${markdown.trimEnd()}\n${regressionLines.join('\n')}${regressionLines.length ? '' : '\n'}`)
  log(`\nwrote ${out}`)
}
if (!partial) writeFileSync(LAST_RUN, `${JSON.stringify({ comparable }, null, 1)}\n`)
if (args.json)
  writeFileSync(args.json, `${JSON.stringify({ profile, pinning, verify, stores, http, multi, worker, comparable }, null, 1)}\n`)
if (http.length) log(`\n${header.split('\n')[2]}`)
log(`\ntook ${Math.round((Date.now() - started.getTime()) / 1000)} s`)

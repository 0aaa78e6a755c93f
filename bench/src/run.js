/**
 * The benchmark suite, one command: `pnpm bench` (from the repository root; builds first).
 *
 *   node bench/src/run.js              full run (~5 minutes); writes bench/RESULTS.md
 *   node bench/src/run.js --quick      short rounds (2 s) for a developer's check; writes nothing unless --out
 *   node bench/src/run.js --smoke      every benchmark with tiny durations (the smoke test); writes nothing unless --out
 *   --only LIST    comma-separated sections (verify, stores, http) and/or HTTP variants by id or prefix
 *                  (express-memory, express-memory-lean, express-sqlite, express-sqlite-dup, hono-memory,
 *                  hono-sqlite, hono-sqlite-dup; `hono` = all Hono variants). Variants alone run only HTTP.
 *   --rounds N --seconds S    HTTP rounds per variant and seconds per round (also BENCH_ROUNDS, BENCH_SECONDS)
 *   --out FILE     where to write the Markdown; --json FILE   the raw figures as JSON
 *
 * Every figure comes from this one run on this machine; ratios are computed within the run.
 * Nothing here asserts a speed: targets are reported as met or not, next to the figure.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { formatMicros, formatRatio } from './harness.js'
import { HTTP_VARIANTS, runHttpBench } from './http.js'
import { detectPinning } from './pinning.js'
import { HTTP_HEADER, httpRows, resultsMarkdown, table, targets } from './report.js'
import { runStoreBench, STORE_CONCURRENCY, STORE_KINDS } from './stores.js'
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
  },
})

const PROFILES = {
  full: {
    verify: { roundMs: 150, rounds: 5 },
    stores: { events: 3_000, rounds: 3 },
    http: { rounds: 3, seconds: 4, warmupSeconds: 2, crossSeconds: 3 },
  },
  quick: {
    verify: { roundMs: 40, rounds: 5 },
    stores: { events: 1_000, rounds: 1 },
    http: { rounds: 3, seconds: 2, warmupSeconds: 1, crossSeconds: 1.5 },
  },
  smoke: {
    verify: { roundMs: 1, rounds: 1 },
    stores: { events: 50, rounds: 1 },
    http: { rounds: 1, seconds: 5, warmupSeconds: 0, crossSeconds: 1, maxPool: 100 },
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
const sectionTokens = tokens.filter((t) => ['verify', 'stores', 'http'].includes(t))
const variantTokens = tokens.filter((t) => !sectionTokens.includes(t))
const variants = HTTP_VARIANTS.filter((v) => variantTokens.length === 0 || variantTokens.some((t) => v.id.startsWith(t)))
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

let http = []
const h = config.http
if (runs('http')) {
  log(`\n## HTTP (${pinning.note}; 10 connections; ${h.rounds} interleaved rounds of ${h.seconds} s after ${h.warmupSeconds} s warm-up)`)
  http = await runHttpBench({
    pinning,
    variants,
    ...h,
    onRound: (variant, r, { bare, variant: ours }) => {
      const side = (x) =>
        `${Math.round(x.perSecond)} req/s ${x.cpuPerRequestUs.toFixed(1)} µs/req (server ${Math.round(x.serverBusy * 100)} %, load ${Math.round(x.loadBusy * 100)} %, others ${x.others === undefined ? '?' : Math.round(x.others * 100)} % of a core)`
      const trouble = bare.flagged || ours.flagged ? `  ⚠ non-2xx ${bare.non2xx + ours.non2xx}, errors ${bare.errors + ours.errors}` : ''
      log(
        `${variant.id.padEnd(19)} round ${r + 1}: bare ${side(bare)} | ours ${side(ours)} | ${formatRatio(ours.perSecond / bare.perSecond)}${trouble}`,
      )
    },
  })
  log(`\n${table(HTTP_HEADER, httpRows(http))}`)
}

const targetRows = targets(verify?.rows, http)
const measured = targetRows.filter((row) => row[1] !== 'not measured')
if (measured.length > 0) log(`\n## Targets (issue 16)\n${table(['Target', 'Measured', 'Result', 'Cross-check (autocannon)'], measured)}`)

const cpu = cpus()
const versions = ['express', 'hono', '@hono/node-server', 'better-sqlite3', 'standardwebhooks', 'svix', 'stripe', 'autocannon']
  .map((name) => `${name} ${version(name)}`)
  .join(', ')
const ours = ['@email-webhooks/core', '@email-webhooks/express', '@email-webhooks/hono']
  .map((name) => `${name} ${version(name)}`)
  .join(', ')
const endLoad = loadavg()
const othersMax = Math.max(0, ...http.map((row) => row.othersMax))
const quiet =
  http.length === 0
    ? ''
    : othersMax <= QUIET
      ? ' The machine was quiet: other processes used at most'
      : ' **Noisy run**: other processes used up to'
const header = [
  `Measured ${started.toISOString().replace('T', ' ').slice(0, 16)} UTC on ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${process.platform} ${process.arch}; load average ${startLoad[0].toFixed(2)} at start, ${endLoad[0].toFixed(2)} at end.`,
  `Node ${process.version}${verify ? `, crypto backend \`${verify.backend}\`` : ''}. Packages: ${ours} (this worktree's build); ${versions}.`,
  ...(http.length
    ? [`${quiet.trim()} ${Math.round(othersMax * 100)} % of the server's core during an HTTP round (quiet means ≤ ${QUIET * 100} %).`]
    : []),
  `Profile: ${profile}${tokens.length ? `, only ${tokens.join(',')}` : ''}; HTTP ${h.rounds} rounds of ${h.seconds} s per variant.`,
  `Reproduce with \`npx -y pnpm@12 bench\` (about 5 minutes; \`node bench/src/run.js --quick --only hono-memory\` checks one variant in ~30 s).`,
].join('\n')
const method = [
  `- HTTP: each variant is paired with its bare framework (the same framework answering 200 after reading the raw body) in ${h.rounds} interleaved rounds (bare, ours, bare, ours, …) of ${h.seconds} s after a ${h.warmupSeconds} s warm-up of each server; the ratio is the median of the rounds' ratios, p50/p99 and CPU the medians of the rounds.`,
  `- Load: 10 keep-alive connections in a closed loop over raw sockets, each request a distinct ~1 KB \`email.queued\` event from a pool signed before the round (never in the loop) and larger than the round can send; the 50 % duplicates pool holds every event twice, the copy 1,000 requests after the original (that variant runs on the SQLite variant's server, after it). Every answer's status is checked; a round with a non-2xx or a socket error is flagged.`,
  `- Cores: ${pinning.note}. Server CPU per request is the server's \`process.cpuUsage()\` (all its threads) across the round divided by the requests it received, read over IPC between rounds (untimed).`,
  `- Cross-check: after its rounds each variant runs one more pair with autocannon sending a fixed count from the same kind of pool, timed end to end; the ratios agree when they differ by at most 0.1.`,
  '- Verification: each case runs in rounds interleaved with the others of its body size; the figure is the median round. Stores: claim + complete of fresh random-UUID keys, best of the rounds.',
].join('\n')
const storeSection = stores
  ? `## Dedup stores (claim + complete per second, fresh random-UUID keys, best of ${config.stores.rounds})\n\n${table(
      ['Store', ...STORE_CONCURRENCY.map((c) => `${c} in flight`)],
      STORE_KINDS.map((kind) => [
        kind.name,
        ...STORE_CONCURRENCY.map(
          (c) => `${Math.round(stores.find((r) => r.store === kind.name && r.concurrency === c).perSecond).toLocaleString('en-US')}/s`,
        ),
      ]),
    )}`
  : ''
const markdown = resultsMarkdown({
  title: 'Benchmark results',
  header,
  method,
  targetRows,
  verify,
  stores,
  storeSection,
  summaries: http,
  smoke: profile === 'smoke',
  noisy: http.length > 0 && othersMax > QUIET,
})

const out = args.out ?? (partial ? undefined : join(benchDir, 'RESULTS.md'))
if (out) {
  writeFileSync(out, markdown)
  log(`\nwrote ${out}`)
}
if (args.json) writeFileSync(args.json, `${JSON.stringify({ profile, pinning, verify, stores, http }, null, 1)}\n`)
if (http.length) log(`\n${header.split('\n')[1 + (http.length ? 1 : 0)]}`)
log(`\ntook ${Math.round((Date.now() - started.getTime()) / 1000)} s`)

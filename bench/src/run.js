/**
 * The benchmark suite, one command: `pnpm bench` (from the repository root).
 *
 *   node bench/src/run.js            full run; writes bench/RESULTS.md and the README summary
 *   node bench/src/run.js --smoke    every benchmark with tiny durations; writes nothing unless --out is given
 *   --out FILE                       where to write the Markdown results
 *
 * Every figure comes from this one run on this machine; ratios are computed within the run.
 * Nothing here asserts a speed: targets are reported as met or not, next to the figure.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { formatMicros, formatRatio } from './harness.js'
import { runHttpBench } from './http.js'
import { runStoreBench, STORE_CONCURRENCY, STORE_KINDS } from './stores.js'
import { runVerifyBench, VERIFY_SIZES } from './verify.js'

const benchDir = fileURLToPath(new URL('..', import.meta.url))
const rootDir = join(benchDir, '..')
const { values: args } = parseArgs({ options: { smoke: { type: 'boolean', default: false }, out: { type: 'string' } } })

const config = args.smoke
  ? { verify: { roundMs: 5, rounds: 1 }, stores: { events: 100, rounds: 1 }, http: { durationSeconds: 1, warmupSeconds: 0 } }
  : { verify: { roundMs: 200, rounds: 7 }, stores: { events: 5_000, rounds: 3 }, http: { durationSeconds: 10, warmupSeconds: 3 } }

function log(line) {
  process.stdout.write(`${line}\n`)
}

function version(name) {
  return JSON.parse(readFileSync(join(benchDir, 'node_modules', name, 'package.json'), 'utf8')).version
}

function table(header, rows) {
  return [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join(
    '\n',
  )
}

const verdict = (met) => (met ? 'met' : '**not met**')
const started = new Date()

log(`# email-webhooks benchmarks${args.smoke ? ' (smoke run: durations too short for real figures)' : ''}`)
log('\n## Verification')
const verify = await runVerifyBench(config.verify)
for (const row of verify.rows)
  log(`${row.size.padEnd(6)} ${row.name.padEnd(32)} ${formatMicros(row.nsPerOp).padStart(10)}  ${formatRatio(row.vsHand)} hand`)
for (const row of verify.reject) log(`reject ${row.name.padEnd(44)} ${formatMicros(row.nsPerOp).padStart(10)}`)

log('\n## Stores (claim + complete per second)')
const stores = await runStoreBench(config.stores)
for (const row of stores)
  log(`${row.store.padEnd(14)} concurrency ${String(row.concurrency).padStart(2)}  ${Math.round(row.perSecond).toLocaleString('en-US')}/s`)

log('\n## HTTP (autocannon, 10 connections, 1 KB events)')
const http = await runHttpBench({
  ...config.http,
  onResult: (row) =>
    log(
      `${row.label.padEnd(56)} ${Math.round(row.perSecond).toLocaleString('en-US').padStart(7)} req/s  p50 ${row.p50} ms  p99 ${row.p99} ms  non-2xx ${row.non2xx}  errors ${row.errors}`,
    ),
})

// ---- Report ----
const at = (size, name) => verify.rows.find((row) => row.size === size && row.name === name)
const verifyTargets = []
const SIZE_LABELS = VERIFY_SIZES.map((size) => size.label)
for (const size of SIZE_LABELS) {
  const ours = at(size, 'verifyWebhook')
  verifyTargets.push([`verifyWebhook ≤ 1.2× hand-written at ${size}`, formatRatio(ours.vsHand), verdict(ours.vsHand <= 1.2)])
}
for (const size of ['300 B', '2 KB']) {
  const ours = at(size, 'verifyWebhook').nsPerOp
  for (const [peer, goal] of [
    ['standardwebhooks', 3],
    ['svix', 3],
    ['stripe', 1.5],
  ]) {
    const speedup = at(size, peer).nsPerOp / ours
    verifyTargets.push([`≥ ${goal}× faster than ${peer} at ${size}`, formatRatio(speedup), verdict(speedup >= goal)])
  }
}
const hmacAt2k = at('2 KB', 'hand-written').nsPerOp
for (const row of verify.reject.filter((r) => r.name.startsWith('verifyWebhook'))) {
  verifyTargets.push([
    `${row.name.replace('verifyWebhook, ', 'refuse a ')} without an HMAC`,
    `${formatMicros(row.nsPerOp)} (a 2 KB HMAC check: ${formatMicros(hmacAt2k)})`,
    'no HMAC is computed: counted in test/core/verify.test.ts',
  ])
}

const httpTargets = []
for (const framework of ['express', 'hono']) {
  const rows = http.filter((row) => row.framework === framework)
  const bare = rows.find((row) => row.server.endsWith('-bare'))
  for (const row of rows.filter((r) => r.server.endsWith('-sqlite') && !r.duplicateRatio)) {
    const throughput = row.perSecond / bare.perSecond
    const p99 = bare.p99 > 0 ? row.p99 / bare.p99 : Number.POSITIVE_INFINITY
    httpTargets.push([`${row.label}: req/s ≥ 0.8× bare`, formatRatio(throughput), verdict(throughput >= 0.8)])
    httpTargets.push([`${row.label}: p99 ≤ 2× bare`, `${row.p99} ms vs ${bare.p99} ms (${formatRatio(p99)})`, verdict(p99 <= 2)])
  }
}

const versions = ['express', 'hono', '@hono/node-server', 'better-sqlite3', 'standardwebhooks', 'svix', 'stripe', 'autocannon']
  .map((name) => `${name} ${version(name)}`)
  .join(', ')
const cpu = cpus()
const machine = `${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${process.platform} ${process.arch}`

const markdown = `# Benchmark results

${args.smoke ? '> Smoke run: durations far too short for real figures.\n\n' : ''}Measured ${started.toISOString().slice(0, 10)} on ${machine}, Node ${process.version}, crypto backend \`${verify.backend}\`.
Versions: ${versions}. Reproduce with \`npx -y pnpm@12 bench\` (about 4 minutes).

## Targets

${table(['Target', 'Measured', 'Result'], [...verifyTargets, ...httpTargets])}

## Verification (median µs per call; ratio to the hand-written node:crypto baseline)

Each library verifies its own signature format over the same body bytes. standardwebhooks, svix and
stripe's \`constructEvent\` also parse the JSON; \`verifyWebhook + parseEnvelope\` is the like-for-like row.

${table(
  ['Body', 'Implementation', 'Time', 'vs hand-written'],
  verify.rows.map((row) => [row.size, row.name, formatMicros(row.nsPerOp), formatRatio(row.vsHand)]),
)}

Refusals (2 KB body):

${table(
  ['Case', 'Time'],
  verify.reject.map((row) => [row.name, formatMicros(row.nsPerOp)]),
)}

## Dedup stores (claim + complete per second, fresh random-UUID keys, best of ${config.stores.rounds})

${table(
  ['Store', ...STORE_CONCURRENCY.map((c) => `${c} in flight`)],
  STORE_KINDS.map((kind) => [
    kind.name,
    ...STORE_CONCURRENCY.map((c) => {
      const row = stores.find((r) => r.store === kind.name && r.concurrency === c)
      return `${Math.round(row.perSecond).toLocaleString('en-US')}/s`
    }),
  ]),
)}

## HTTP (autocannon in its own process, 10 connections, 1 KB events, ${config.http.warmupSeconds} s warm-up, ${config.http.durationSeconds} s measured)

Every request is a distinct signed event (in the duplicate rows, half are byte-identical re-sends of
an event sent at least 100 requests earlier). \`sqlite\` is the default store: a SQLite file with
durability 'full' (every 2xx waits for its event's fdatasync).

${table(
  ['Server', 'req/s', 'vs bare', 'p50', 'p99', 'non-2xx', 'errors', 'handler runs'],
  http.map((row) => {
    const bare = http.find((r) => r.framework === row.framework && r.server.endsWith('-bare'))
    return [
      row.label,
      Math.round(row.perSecond).toLocaleString('en-US'),
      formatRatio(row.perSecond / bare.perSecond),
      `${row.p50} ms`,
      `${row.p99} ms`,
      String(row.non2xx),
      String(row.errors),
      row.handled === undefined ? '?' : row.handled.toLocaleString('en-US'),
    ]
  }),
)}
`

const summary = `| What (${started.toISOString().slice(0, 10)}, ${cpu.length} cores, Node ${process.version}) | Figure |
| --- | --- |
| \`verifyWebhook\` vs hand-written node:crypto, ${SIZE_LABELS.join(' / ')} | ${SIZE_LABELS.map((s) => formatRatio(at(s, 'verifyWebhook').vsHand)).join(' / ')} |
| Faster than standardwebhooks / svix / stripe at 2 KB | ${['standardwebhooks', 'svix', 'stripe'].map((p) => formatRatio(at('2 KB', p).nsPerOp / at('2 KB', 'verifyWebhook').nsPerOp)).join(' / ')} |
| SQLite 'full' claim + complete, ${STORE_CONCURRENCY.join(' / ')} in flight | ${STORE_CONCURRENCY.map((c) => `${Math.round(stores.find((r) => r.store === 'sqlite full' && r.concurrency === c).perSecond).toLocaleString('en-US')}/s`).join(' / ')} |
${['express', 'hono']
  .map((framework) => {
    const bare = http.find((r) => r.framework === framework && r.server.endsWith('-bare'))
    const ours = http.find((r) => r.framework === framework && r.server.endsWith('-sqlite') && !r.duplicateRatio)
    return `| ${framework === 'express' ? 'Express 5' : 'Hono (node-server)'} + emailWebhook + durable SQLite vs bare: req/s, p99 | ${formatRatio(ours.perSecond / bare.perSecond)} (${Math.round(ours.perSecond).toLocaleString('en-US')} vs ${Math.round(bare.perSecond).toLocaleString('en-US')}), ${ours.p99} ms vs ${bare.p99} ms |`
  })
  .join('\n')}`

const out = args.out ?? (args.smoke ? undefined : join(benchDir, 'RESULTS.md'))
if (out) {
  writeFileSync(out, markdown)
  log(`\nwrote ${out}`)
}
if (!args.smoke) {
  const readmePath = join(rootDir, 'README.md')
  const readme = readFileSync(readmePath, 'utf8')
  const start = '<!-- bench:summary:start -->'
  const end = '<!-- bench:summary:end -->'
  if (readme.includes(start) && readme.includes(end)) {
    writeFileSync(readmePath, `${readme.slice(0, readme.indexOf(start) + start.length)}\n${summary}\n${readme.slice(readme.indexOf(end))}`)
    // Align the table as the lint step expects.
    spawnSync(join(rootDir, 'node_modules', '.bin', 'biome'), ['format', '--write', 'README.md'], { cwd: rootDir, stdio: 'ignore' })
    log(`updated the summary in ${readmePath}`)
  }
}

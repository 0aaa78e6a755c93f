// The long fault runs, not part of `npm test` (which runs a quick scenario of each fault,
// test/faults/quick-*.test.ts) nor of `npm run test:all` (the full ones, test/faults/faults.test.ts):
//   npm run chaos                 the fault suite with FAULTS_LONG=1: longer faults, more traffic,
//                                 the contract's disable threshold in the kill loop too; one file
//                                 at a time, then the table of every scenario (docs/reliability.md)
//   npm run soak -- --minutes 30  the soak (test/faults/soak.ts): default SQLite store and
//                                 PostgreSQL under steady traffic plus 10 % duplicates, a line a
//                                 minute; also --rate <events/s> and --retention <seconds>
// Like `npm test`, they need only Node and npm: pnpm, the dependencies, PostgreSQL, Redis and
// strace are obtained the same way (scripts/workspace.mjs, scripts/services.mjs).
import { mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { ensureServices } from './services.mjs'
import { buildIfStale, createSteps, install, ROOT, run } from './workspace.mjs'

const [mode, ...args] = process.argv.slice(2)
if (mode !== 'chaos' && mode !== 'soak') {
  console.error('usage: node scripts/faults.mjs chaos | soak [--minutes N] [--rate N] [--retention S]')
  process.exit(2)
}
const flag = (name, fallback) => {
  const index = args.indexOf(`--${name}`)
  if (index === -1) return fallback
  const value = Number(args[index + 1])
  if (!Number.isFinite(value) || value <= 0) {
    console.error(`--${name} needs a positive number`)
    process.exit(2)
  }
  return value
}
const vitest = `${ROOT}/node_modules/vitest/vitest.mjs`
const cache = join(ROOT, 'node_modules/.cache/email-webhooks-faults')
mkdirSync(cache, { recursive: true })
const steps = createSteps(mode === 'chaos' ? 'npm run chaos' : `npm run soak -- ${args.join(' ')}`.trim())

await steps.step('install dependencies (pnpm, from the lockfile)', install)
let env = {}
await steps.step('PostgreSQL, Redis and strace', async () => {
  env = await ensureServices()
})
await steps.step('build packages whose sources changed', buildIfStale)

if (mode === 'chaos') {
  const figures = join(cache, 'chaos.jsonl')
  rmSync(figures, { force: true })
  await steps.step('fault suite, long (test/faults/faults.test.ts with FAULTS_LONG=1)', () =>
    run(process.execPath, [vitest, 'run', 'test/faults/faults.test.ts'], {
      env: { ...env, TEST_TIER: 'all', FAULTS_LONG: '1', FAULTS_FIGURES: figures },
    }),
  )
  steps.summary()
  printTable(figures)
} else {
  const minutes = flag('minutes', 30)
  const out = join(cache, 'soak.jsonl')
  rmSync(out, { force: true })
  await steps.step(`soak, ${minutes} min`, () =>
    run(process.execPath, [vitest, 'run', '--config', 'test/faults/soak.config.ts'], {
      env: {
        ...env,
        FAULTS_SOAK_MINUTES: String(minutes),
        FAULTS_SOAK_RATE: String(flag('rate', 50)),
        FAULTS_SOAK_RETENTION_MS: String(flag('retention', 120) * 1000),
        FAULTS_SOAK_OUT: out,
      },
    }),
  )
  steps.summary()
  console.log(`\nsamples (one JSON line per store and minute): ${out}`)
}

/** The Markdown table of the scenarios' figures, as test/faults/figures.ts writes them. */
function printTable(path) {
  let rows = []
  try {
    rows = readFileSync(path, 'utf8').trim().split('\n').filter(Boolean).map(JSON.parse)
  } catch {
    return
  }
  const head = ['scenario', 'emitted', 'handled once', 'handled twice', 'lost', '2xx without a record', 'not delivered', 'p99 answer']
  const lines = [head, head.map(() => '---')]
  for (const f of rows) {
    lines.push([f.scenario, f.emitted, f.once, f.twice, f.lost, f.okWithoutRecord, `${f.notSent} / ${f.pastList}`, `${f.p99Ms} ms`])
  }
  console.log(`\n${lines.map((cells) => `| ${cells.join(' | ')} |`).join('\n')}\n`)
}

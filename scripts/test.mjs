// The test commands: everything the tests need, then the tests.
//   npm test                      install, services, build, lint, types, then vitest's default tier:
//                                 every unit test, the adapter behaviour suite, the store
//                                 conformance suites on every store, a short scenario of each fault
//   npm test -- <vitest filters>  install, services, build, then only those files, from either tier
//                                 (e.g. `npm test -- packages/cli`, `npm test -- test/faults/faults.test.ts`)
//   npm run test:all              npm test's steps, the package checks (publint, attw), vitest with
//                                 every file (TEST_TIER=all adds the long fault scenarios, many-instance
//                                 races, the soak, the browser tests), and a quick check on Node 22
//   npm run test:stress           vitest's default tier while two busy processes hold both cores, with
//                                 TEST_TIME_SCALE=3 (deadlines three times as long); `-- --runs 3`
//                                 repeats it and counts the failures of each run
//   npm run test:matrix           the whole suite again on Node 22 and Node 24 (CI runs it last)
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { availableParallelism, loadavg } from 'node:os'
import { ensureServices } from './services.mjs'
import { buildIfStale, createSteps, install, pnpmCommand, ROOT, run } from './workspace.mjs'

const args = process.argv.slice(2)
const mode = args.includes('--matrix') ? 'matrix' : args.includes('--all') ? 'all' : args.includes('--stress') ? 'stress' : 'default'
const runsIndex = args.indexOf('--runs')
const runs = runsIndex === -1 ? 1 : Number(args[runsIndex + 1])
if (!Number.isInteger(runs) || runs < 1) {
  console.error('--runs needs a whole number of at least 1')
  process.exit(2)
}
const filters = args.filter((a, i) => !a.startsWith('--') && !(runsIndex !== -1 && i === runsIndex + 1))
const [pnpm, pnpmArgs] = pnpmCommand()
const vitest = `${ROOT}/node_modules/vitest/vitest.mjs`
const report = `${ROOT}/node_modules/.cache/email-webhooks-test/vitest.json`
const reporters = ['--reporter=default', '--reporter=json', `--outputFile=${report}`]
rmSync(report, { force: true })
const titles = {
  matrix: 'npm run test:matrix',
  all: 'npm run test:all',
  stress: `npm run test:stress${runs > 1 ? ` -- --runs ${runs}` : ''}`,
  default: filters.length ? `npm test -- ${filters.join(' ')}` : 'npm test',
}
const steps = createSteps(titles[mode])
let env = await timeScaleEnv()
/** The one file that needs Chromium (in test:all, or when a filter picks it). */
/** The files that need Chromium or PgBouncer, which only test:all (or a filter naming them) gets. */
const BROWSER_TESTS = ['test/console/browser.test.ts', 'test/store/pgbouncer.test.ts']

await steps.step('install dependencies (pnpm, from the lockfile)', install)
await steps.step(
  `PostgreSQL, Redis and strace${mode === 'all' ? ', Chromium and PgBouncer' : ''} for the store${mode === 'all' ? ' and browser' : ''} tests`,
  async () => {
    const browser =
      mode === 'all' || mode === 'matrix' || filters.some((f) => BROWSER_TESTS.some((file) => file.includes(f.replace(/^\.\//, ''))))
    env = { ...env, ...(await ensureServices({ browser })) }
  },
)
await steps.step('build packages whose sources changed', buildIfStale)

if (mode === 'matrix') {
  await steps.step('vitest on Node 22 and Node 24 (whole suite)', () =>
    run(process.execPath, ['test/runtimes/node-versions.mjs', '--matrix'], { env: { ...env, TEST_TIER: 'all' } }),
  )
} else if (mode === 'stress') {
  const results = []
  for (let i = 1; i <= runs; i++) {
    const code = await steps.step(
      `vitest's default tier, a busy process on each core, TEST_TIME_SCALE=${env.TEST_TIME_SCALE} (run ${i} of ${runs})`,
      () => underLoad(() => run(process.execPath, [vitest, 'run', ...reporters, ...filters], { env })),
      { continueOnFailure: true },
    )
    results.push({ run: i, code, ...counts() })
  }
  steps.summary()
  console.log('\nruns under load:')
  for (const r of results)
    console.log(`  run ${r.run}: ${r.passed} passed, ${r.failed} failed${r.failedFiles.length ? ` (${r.failedFiles.join(', ')})` : ''}`)
  process.exit(results.some((r) => r.code !== 0) ? 1 : 0)
} else if (filters.length > 0) {
  await steps.step('vitest', () => run(process.execPath, [vitest, 'run', ...reporters, ...filters], { env: { TEST_TIER: 'all', ...env } }))
} else {
  await steps.step('lint (Biome)', () => run(`${ROOT}/node_modules/.bin/biome`, ['check', '.']))
  if (mode === 'all') {
    await steps.step('type checks', () => typecheck())
    await steps.step('package checks (publint, attw)', () =>
      run(pnpm, [...pnpmArgs, '--filter', './packages/*', '-r', 'check:package'], { quiet: true, label: 'package checks' }),
    )
    await steps.step('vitest (Node 20, every file: TEST_TIER=all)', () =>
      run(process.execPath, [vitest, 'run', ...reporters], { env: { TEST_TIER: 'all', ...env } }),
    )
    await steps.step('Node 22 quick check (SQLite store, Express example)', () =>
      run(process.execPath, ['test/runtimes/node-versions.mjs', '--quick'], { env, quiet: true, label: 'Node 22' }),
    )
  } else {
    // tsc computes on one core while most of vitest's files wait on servers, child processes and
    // leases: side by side, the type checks cost little of the wall time. At a lower priority, so
    // that they take the CPU vitest leaves (a fresh clone's first type checks, without their
    // incremental cache, took 84 s of a 188 s run).
    await steps.together([
      { name: 'type checks', fn: () => typecheck({ ticker: false, nice: 10 }) },
      { name: 'vitest (Node 20, default tier)', fn: () => run(process.execPath, [vitest, 'run', ...reporters], { env }) },
    ])
  }
}
steps.summary()
const { passed, failed, skipped } = counts()
if (passed + failed > 0) console.log(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped`)

/**
 * TEST_TIME_SCALE for this run: as given, else 3 under test:stress, else from how busy the
 * machine is as the command starts (processes wanting a core, other than this one, per core:
 * under 0.75 quiet, 1; busier, one more per unit per core, at most 4), said in one line when it is
 * not 1. On Linux the count is sampled now (`procs_running` in /proc/stat, twenty looks over one
 * second), not the load average: that one trails by minutes, so a run started right after
 * another would count the one before as load.
 */
async function timeScaleEnv() {
  const given = process.env.TEST_TIME_SCALE
  if (given) return { TEST_TIME_SCALE: given }
  if (mode === 'stress') return { TEST_TIME_SCALE: '3' }
  const cores = availableParallelism()
  const { busy, how } = await othersRunning()
  const perCore = busy / cores
  if (perCore < 0.75) return {}
  const scale = Math.min(4, Math.round((1 + perCore) * 2) / 2)
  console.log(
    `busy machine (${how(busy.toFixed(1))} on ${cores} cores): the tests' deadlines ×${scale} (TEST_TIME_SCALE=${scale}; set it to choose)`,
  )
  return { TEST_TIME_SCALE: String(scale) }
}

/** How many other processes want a core right now: sampled from /proc/stat, else the load average. */
async function othersRunning() {
  const looks = []
  for (let i = 0; i < 20; i++) {
    try {
      const line = readFileSync('/proc/stat', 'utf8').match(/^procs_running (\d+)$/m)
      if (!line) break
      looks.push(Number(line[1]) - 1) // this process, reading
    } catch {
      break
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  if (looks.length === 0) return { busy: loadavg()[0], how: (n) => `load average ${n}` }
  return { busy: looks.reduce((a, b) => a + b, 0) / looks.length, how: (n) => `${n} other processes running` }
}

/** tsc over every package, example and the tests; its output only when it fails. */
function typecheck({ ticker = true, nice = 0 } = {}) {
  return run(pnpm, [...pnpmArgs, '-r', '--if-present', 'typecheck'], { quiet: true, label: ticker ? 'type checks' : undefined, nice })
}

/** The counts of the last vitest run's JSON report. */
function counts() {
  if (!existsSync(report)) return { passed: 0, failed: 0, skipped: 0, failedFiles: [] }
  const json = JSON.parse(readFileSync(report, 'utf8'))
  const failedFiles = json.testResults.filter((f) => f.status === 'failed').map((f) => f.name.slice(ROOT.length + 1))
  return { passed: json.numPassedTests, failed: json.numFailedTests, skipped: json.numPendingTests, failedFiles }
}

/**
 * Runs `fn` while one busy process per core spins (what `stress-ng --cpu <cores>` does, without
 * installing it): the tests get about half the CPU they get on a quiet machine.
 */
async function underLoad(fn) {
  const spin = 'const end = Date.now() + 3_600_000; while (Date.now() < end) {}'
  const spinners = Array.from({ length: availableParallelism() }, () => spawn(process.execPath, ['-e', spin], { stdio: 'ignore' }))
  try {
    return await fn()
  } finally {
    for (const child of spinners) child.kill('SIGKILL')
  }
}

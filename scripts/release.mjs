// The release, in one command (docs/releasing.md):
//
//   npm run release -- --dry-run   everything a release does, in a temporary copy of the repository, so
//                                  nothing here changes: the versions and changelogs the pending change
//                                  notes give (changeset version), a build, publint and attw, the API
//                                  reports (a difference fails), the tarballs, every tarball installed
//                                  into a fresh app that runs the pack test's smoke checks, then
//                                  `npm publish --dry-run` of each public package; prints what would be
//                                  published at which version. CI runs it after the tests.
//   npm run release                the same in this tree, to commit: versions, CHANGELOG.md files and
//                                  the API reports written, change notes consumed; publishes nothing.
//                                  Then commit, tag v<version> and push the tag.
//   npm run release -- --tag       the release workflow's first job (.github/workflows/release.yml), on
//                                  a tag v<version>: the tag must equal the committed versions, no change
//                                  note may wait, and each package.json must name this repository (npm
//                                  provenance checks it); then the same checks, the tarballs in ./packs
//                                  and `npm publish --dry-run`. The workflow's second job publishes
//                                  those tarballs with --provenance through npm's trusted publishing
//                                  (OIDC), running nothing of this repository. Nothing here publishes.
import { spawn } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { checkReports, describeDifferences, publishedPackages } from './api-report.mjs'
import { buildIfStale, createSteps, install, pnpmCommand, ROOT, run } from './workspace.mjs'

const args = process.argv.slice(2)
const dryRun = args.includes('--dry-run')
const tag = args.includes('--tag')
const keep = args.includes('--keep')
const known = new Set(['--dry-run', '--tag', '--keep'])
const unknown = args.filter((arg) => !known.has(arg))
if (unknown.length > 0 || (dryRun && tag)) {
  console.error(`Usage: npm run release [-- --dry-run [--keep] | --tag]${unknown.length > 0 ? ` (unknown: ${unknown.join(' ')})` : ''}`)
  process.exit(2)
}

const [pnpm, pnpmArgs] = pnpmCommand()
const mode = dryRun ? 'npm run release -- --dry-run' : tag ? 'npm run release -- --tag' : 'npm run release'
const steps = createSteps(mode)
const color = process.stdout.isTTY && !process.env.NO_COLOR
const bold = (text) => (color ? `\x1b[1m${text}\x1b[22m` : text)

/** Runs a command and resolves with its exit code and output (printed only when it fails, or when `show`). */
function capture(command, argv, { cwd, env, show = false } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk) => {
      output += chunk
      if (show) process.stdout.write(chunk)
    })
    child.stderr.on('data', (chunk) => {
      output += chunk
      if (show) process.stderr.write(chunk)
    })
    child.on('error', reject)
    child.on('close', (code) => {
      if (code !== 0 && !show) process.stdout.write(output.slice(-8000))
      resolve({ code: code ?? 1, output })
    })
  })
}

/** The public packages of `root`, with their versions. */
function packagesOf(root) {
  return publishedPackages(root).map(({ dir, name, manifest }) => ({ dir, name, pkg: manifest.name, version: manifest.version }))
}

/** The change notes waiting in .changeset/ (not its README). */
function pendingNotes(root) {
  const dir = join(root, '.changeset')
  return existsSync(dir) ? readdirSync(dir).filter((file) => file.endsWith('.md') && file !== 'README.md') : []
}

/**
 * A copy of the repository to release from without touching it: the files git knows (tracked, and
 * new ones not ignored), with dependencies installed of its own (from the lockfile and pnpm's store,
 * the root and the packages only: a few seconds), so that nothing run there writes into this tree.
 */
async function copyRepository() {
  const copy = mkdtempSync(join(tmpdir(), 'email-webhooks-release-'))
  const { code, output } = await capture('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT })
  if (code !== 0) throw new Error(`git ls-files failed: ${output}`)
  for (const file of output.split('\0').filter(Boolean)) {
    const from = join(ROOT, file)
    if (!existsSync(from)) continue // deleted in the working tree
    mkdirSync(dirname(join(copy, file)), { recursive: true })
    cpSync(from, join(copy, file), { verbatimSymlinks: true })
  }
  const installed = await capture(
    pnpm,
    [
      ...pnpmArgs,
      'install',
      '--frozen-lockfile',
      '--prefer-offline',
      '--filter',
      './packages/*',
      '--filter',
      '.',
      '--reporter=append-only',
    ],
    { cwd: copy, env: { npm_config_update_notifier: 'false' } },
  )
  if (installed.code !== 0) throw new Error('pnpm install failed in the copy')
  return copy
}

let work = ROOT
const before = packagesOf(ROOT)
let after = before
const packs = join(dryRun ? tmpdir() : ROOT, dryRun ? `email-webhooks-release-packs-${process.pid}` : 'packs')
const published = []

const cleanup = () => {
  if (dryRun && !keep) {
    if (work !== ROOT) rmSync(work, { recursive: true, force: true })
    rmSync(packs, { recursive: true, force: true })
  }
}
process.on('exit', cleanup)
process.on('SIGINT', () => process.exit(130))

if (tag) {
  // Before anything is installed or built: a tag that cannot be released stops at once.
  await steps.step('check the tag against the versions, the change notes and the repository', () => {
    const notes = pendingNotes(ROOT)
    if (notes.length > 0) {
      console.error(`  change notes still pending (${notes.join(', ')}): run npm run release, commit, then tag.`)
      return 1
    }
    const versions = new Set(before.map(({ version }) => version))
    const ref = process.env.GITHUB_REF_NAME ?? ''
    if (versions.size !== 1 || ref !== `v${[...versions][0]}`) {
      console.error(
        `  the tag ${ref || '(none: GITHUB_REF_NAME is not set)'} does not match the packages' version (${[...versions].join(', ')}): tag the release commit v<version>.`,
      )
      return 1
    }
    const repository = `${process.env.GITHUB_SERVER_URL ?? 'https://github.com'}/${process.env.GITHUB_REPOSITORY ?? ''}`.replace(
      /^https?:\/\//,
      '',
    )
    const unlinked = publishedPackages(ROOT).filter(({ manifest }) => !String(manifest.repository?.url ?? '').includes(repository))
    if (!process.env.GITHUB_REPOSITORY || unlinked.length > 0) {
      console.error(
        `  npm provenance needs each package.json's repository.url to name the repository the workflow runs in (${repository}): missing or different in ${unlinked.map(({ manifest }) => manifest.name).join(', ') || '(GITHUB_REPOSITORY is not set)'}.`,
      )
      return 1
    }
    return 0
  })
}

await steps.step('install dependencies (pnpm, from the lockfile)', install)

if (dryRun) {
  await steps.step('copy the repository and install it (the dry run changes nothing here)', async () => {
    work = await copyRepository()
    console.log(`  ${work}`)
  })
}

if (!tag) {
  await steps.step('version from the change notes (changeset version)', async () => {
    const notes = pendingNotes(work)
    if (notes.length === 0) {
      console.log('  no change notes pending: the versions stay as they are')
      return 0
    }
    console.log(`  ${notes.length} change notes: ${notes.join(', ')}`)
    const { code } = await capture(join(ROOT, 'node_modules/.bin/changeset'), ['version'], { cwd: work })
    if (code !== 0) return code
    after = packagesOf(work)
    return 0
  })
}

await steps.step('build the packages', async () => {
  if (work === ROOT) return buildIfStale()
  // The copy has no build yet: every package, with the new versions built in.
  return run(pnpm, [...pnpmArgs, '--filter', './packages/*', '-r', 'build'], { cwd: work, quiet: true, label: 'building' })
})

await steps.step('package checks (publint, attw)', () =>
  run(pnpm, [...pnpmArgs, '--filter', './packages/*', '-r', 'check:package'], { cwd: work, quiet: true, label: 'package checks' }),
)

await steps.step(`API reports ${dryRun || tag ? 'unchanged' : 'updated'}`, () => {
  const differences = checkReports({ root: work, update: !dryRun && !tag })
  if (dryRun || tag) {
    if (differences.length > 0) {
      console.error(describeDifferences(differences))
      return 1
    }
    console.log('  every report matches the built declarations')
  }
  return 0
})

await steps.step('pack every public package', async () => {
  rmSync(packs, { recursive: true, force: true })
  mkdirSync(packs, { recursive: true })
  for (const { dir, pkg } of after.map((p) => ({ ...p, dir: join(work, 'packages', p.name) }))) {
    const { code } = await capture(pnpm, [...pnpmArgs, 'pack', '--pack-destination', packs], { cwd: dir })
    if (code !== 0) {
      console.error(`  pnpm pack failed for ${pkg}`)
      return code
    }
  }
  // Internal dependencies move together: each names the others at the version released with it.
  const versionOf = new Map(after.map(({ pkg, version }) => [pkg, version]))
  for (const file of readdirSync(packs)) {
    const { output } = await capture('tar', ['-xzOf', join(packs, file), 'package/package.json'])
    const manifest = JSON.parse(output)
    for (const [name, range] of Object.entries({ ...manifest.dependencies, ...manifest.peerDependencies })) {
      if (versionOf.has(name) && range !== `^${versionOf.get(name)}`) {
        console.error(`  ${manifest.name} depends on ${name} ${range}, not ^${versionOf.get(name)}`)
        return 1
      }
    }
  }
  console.log(`  ${readdirSync(packs).length} tarballs in ${packs}`)
  return 0
})

await steps.step('install the tarballs into a fresh app and run its smoke checks (test/pack)', () =>
  run(process.execPath, [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', 'test/pack/pack.test.ts'], {
    cwd: ROOT,
    // TEST_TIER=all: the pack test is in the long tier (vitest.config.ts), which a bare run leaves out.
    env: { EMAIL_WEBHOOKS_PACKS: packs, TEST_TIER: 'all' },
    quiet: true,
    label: 'smoke checks',
  }),
)

await steps.step('npm publish --dry-run of each package', async () => {
  for (const file of readdirSync(packs).sort()) {
    const { code, output } = await capture('npm', ['publish', join(packs, file), '--dry-run', '--access', 'public'], {
      cwd: packs,
      env: { npm_config_update_notifier: 'false' },
    })
    if (code !== 0) return code
    const name = /^\+ (.+)@([^@\s]+)$/m.exec(output)
    const size = /package size:\s*(.+)$/m.exec(output)?.[1]
    const files = /total files:\s*(\d+)/m.exec(output)?.[1]
    published.push({ name: name?.[1] ?? file, version: name?.[2] ?? '?', size, files })
  }
  return 0
})

steps.summary()
const width = Math.max(...published.map(({ name }) => name.length))
const from = new Map(before.map(({ pkg, version }) => [pkg, version]))
console.log(bold(`\nWould publish (${published.length} packages, public access):`))
for (const { name, version, size, files } of published) {
  const was = from.get(name)
  console.log(
    `  ${name.padEnd(width)}  ${version.padEnd(8)} ${was && was !== version ? `(from ${was})` : '(unchanged)'.padEnd(12)}  ${size ?? ''}, ${files ?? '?'} files`,
  )
}
if (dryRun) {
  const missing = publishedPackages(work).filter(({ manifest }) => !manifest.repository?.url)
  if (missing.length > 0) {
    console.log(
      `\nBefore the first publish: npm provenance needs repository.url in each package.json (missing in ${missing.length}: ${missing.map(({ manifest }) => manifest.name).join(', ')}); the release workflow refuses to publish without it (docs/releasing.md).`,
    )
  }
  if (keep) console.log(`\nKept: the versioned copy ${work} and the tarballs ${packs}.`)
} else if (tag) {
  console.log(`\nThe tarballs are in ${packs}: the release workflow's publish job publishes them with provenance.`)
} else {
  console.log(
    `\nNext: review and commit (package.json versions, CHANGELOG.md files, packages/*/api, the consumed change notes), then tag v${after[0]?.version} and push the tag: the release workflow publishes. Tarballs for a look: ${relative(process.cwd(), packs) || packs}`,
  )
}

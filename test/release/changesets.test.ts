/**
 * The release's inputs are well formed: every published package is in the one fixed version group
 * (a new package left out would be released at a version of its own, and its internal ranges would
 * not move with the others), no private package is versioned, every change note names published
 * packages with a bump the semver policy allows before 1.0 (docs/releasing.md: a breaking change is
 * `minor` and says so), and `npm run release -- --tag` refuses a tag it cannot release before it builds.
 */
import { execFile } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { publishedPackages } from '../../scripts/api-report.mjs'

const run = promisify(execFile)
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const config = JSON.parse(readFileSync(join(ROOT, '.changeset/config.json'), 'utf8')) as {
  fixed: string[][]
  privatePackages: { version: boolean; tag: boolean }
  access: string
}
const published = publishedPackages().map(({ manifest }) => manifest.name as string)
const notes = readdirSync(join(ROOT, '.changeset')).filter((file) => file.endsWith('.md') && file !== 'README.md')

describe('change notes and versions', () => {
  it('keeps every published package in one fixed version group, and never versions a private one', () => {
    expect(config.fixed).toHaveLength(1)
    expect([...(config.fixed[0] ?? [])].sort()).toEqual([...published].sort())
    expect(config.privatePackages).toEqual({ version: false, tag: false })
    expect(config.access).toBe('public')
  })

  it('has every published package at one version, depending on the others with workspace:^', () => {
    const packages = publishedPackages()
    expect(new Set(packages.map(({ manifest }) => manifest.version)).size).toBe(1)
    for (const { manifest } of packages) {
      const internal = Object.entries({ ...(manifest.dependencies as object), ...(manifest.peerDependencies as object) }).filter(([name]) =>
        published.includes(name),
      )
      for (const [name, range] of internal) expect([manifest.name, name, range]).toEqual([manifest.name, name, 'workspace:^'])
    }
  })

  for (const note of notes) {
    it(`${note}: names published packages, with patch or minor (before 1.0), and says what changed`, () => {
      const text = readFileSync(join(ROOT, '.changeset', note), 'utf8')
      const match = /^---\n([\s\S]*?)\n---\n\n([\s\S]+)$/.exec(text)
      expect(match, 'front matter, a blank line, then the note').not.toBeNull()
      const bumps = (match?.[1] ?? '').split('\n').map((line) => /^'([^']+)': (patch|minor|major)$/.exec(line))
      expect(bumps.every(Boolean), `each front-matter line is '<package>': <bump>: ${match?.[1]}`).toBe(true)
      for (const bump of bumps) {
        expect(published).toContain(bump?.[1])
        expect(bump?.[2], 'before 1.0 a breaking change is minor (docs/releasing.md)').not.toBe('major')
      }
      expect((match?.[2] ?? '').trim().length).toBeGreaterThan(80)
    })
  }

  it('reads the notes as changesets does (changeset status)', async () => {
    const { stdout } = await run(join(ROOT, 'node_modules/.bin/changeset'), ['status'], { cwd: ROOT })
    if (notes.length > 0) for (const name of published) expect(stdout).toContain(name)
  })
})

describe('npm run release', () => {
  it('releases a tag only when it equals the versions and no change note waits, before building anything (--tag)', async () => {
    const env = { ...process.env, GITHUB_REF_NAME: 'v9.9.9', GITHUB_REPOSITORY: 'someone/email-webhooks' }
    const started = performance.now()
    const error = await run(process.execPath, [join(ROOT, 'scripts/release.mjs'), '--tag'], { cwd: ROOT, env }).then(
      () => undefined,
      (e: { code: number; stderr: string; stdout: string }) => e,
    )
    expect(error?.code).toBe(1)
    expect(error?.stderr).toContain(
      notes.length > 0
        ? 'change notes still pending'
        : `the tag v9.9.9 does not match the packages' version (${publishedPackages()[0]?.manifest.version})`,
    )
    expect(error?.stdout).not.toContain('install dependencies')
    expect(performance.now() - started).toBeLessThan(10_000)
  })

  it('refuses flags it does not know (exit 2, with the usage)', async () => {
    const error = await run(process.execPath, [join(ROOT, 'scripts/release.mjs'), '--dryrun'], { cwd: ROOT }).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    )
    expect(error?.code).toBe(2)
    expect(error?.stderr).toContain('Usage: npm run release [-- --dry-run [--keep] | --tag] (unknown: --dryrun)')
  })
})

/**
 * The GitHub workflows of the public repository (.github/workflows), which do not run here, parsed
 * and checked: their triggers; least-privilege permissions (read-only CI, an OIDC token only in the
 * job that publishes, which checks nothing out and runs no script of the repository); every
 * third-party action pinned to a full commit SHA with its version in a comment; every command they
 * run exists (package.json scripts, release flags, test paths); the README's two commands in CI;
 * Node 20 (the packages' floor) with 22 and 24 through test:matrix; Bun, Deno and workerd jobs;
 * the publish with --provenance on npm 11 (Node 24); the documentation site built by `npm run docs`
 * and published to GitHub Pages on version tags by a job that runs nothing of the repository.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8')

type Step = { uses?: string; run?: string; with?: Record<string, unknown>; env?: Record<string, string>; name?: string }
type Job = {
  permissions?: Record<string, string>
  steps: Step[]
  needs?: string
  environment?: string
  strategy?: { matrix: { include: Record<string, string>[] } }
}
type Workflow = { on: Record<string, unknown>; permissions?: Record<string, string>; jobs: Record<string, Job> }

const FILES = ['.github/workflows/ci.yml', '.github/workflows/release.yml', '.github/workflows/docs.yml'] as const
const text = Object.fromEntries(FILES.map((file) => [file, read(file)])) as Record<(typeof FILES)[number], string>
const ci = parse(text['.github/workflows/ci.yml']) as Workflow
const release = parse(text['.github/workflows/release.yml']) as Workflow
const docs = parse(text['.github/workflows/docs.yml']) as Workflow
const manifest = JSON.parse(read('package.json')) as { scripts: Record<string, string>; engines: { node: string } }

const steps = (workflow: Workflow): Step[] => Object.values(workflow.jobs).flatMap((job) => job.steps)
/** Each shell command of a workflow, one per line, with `${{ matrix.x }}` expanded for every matrix entry. */
function commands(workflow: Workflow): string[] {
  return Object.values(workflow.jobs).flatMap((job) => {
    const entries = job.strategy?.matrix.include ?? [{}]
    return job.steps.flatMap((step) =>
      (step.run ?? '')
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean)
        .flatMap((line) => entries.map((entry) => line.replace(/\$\{\{ matrix\.(\w+) \}\}/g, (_, key: string) => entry[key] ?? ''))),
    )
  })
}
const setupNode = (job: Job): Step | undefined => job.steps.find((step) => step.uses?.startsWith('actions/setup-node@'))

describe('.github/workflows', () => {
  it('CI runs on pull requests and on pushes to main; the release only on version tags', () => {
    expect(Object.keys(ci.on).sort()).toEqual(['pull_request', 'push'])
    expect(ci.on.push).toEqual({ branches: ['main'] })
    expect(Object.keys(release.on)).toEqual(['push'])
    expect(release.on.push).toEqual({ tags: ['v[0-9]+.[0-9]+.[0-9]+*'] })
  })

  it('grants least privilege: CI reads, the release grants nothing by default and an OIDC token only to the job that publishes', () => {
    expect(ci.permissions).toEqual({ contents: 'read' })
    for (const job of Object.values(ci.jobs)) expect(job.permissions).toBeUndefined()
    expect(release.permissions).toEqual({})
    expect(release.jobs.check?.permissions).toEqual({ contents: 'read' })
    expect(release.jobs.publish?.permissions).toEqual({ 'id-token': 'write' })
    expect(release.jobs.publish?.needs).toBe('check')
    expect(release.jobs.publish?.environment).toBe('npm')
    // The job with the token checks nothing out and runs nothing of the repository: only npm on the checked tarballs.
    const publish = release.jobs.publish as Job
    expect(publish.steps.some((step) => step.uses?.startsWith('actions/checkout@'))).toBe(false)
    for (const command of commands({ ...release, jobs: { publish } }))
      expect(command, 'the publish job runs no script of the repository').not.toMatch(/\bnpm (run|test|install|ci)\b|\bpnpm\b|\bnpx\b/)
    // No job writes to the repository, and checkouts keep no credentials.
    for (const workflow of [ci, release, docs]) {
      for (const job of Object.values(workflow.jobs))
        for (const level of Object.values(job.permissions ?? {})) expect(level).not.toBe('write-all')
      for (const step of steps(workflow).filter((s) => s.uses?.startsWith('actions/checkout@')))
        expect(step.with?.['persist-credentials']).toBe(false)
    }
    expect(text['.github/workflows/ci.yml']).not.toMatch(/contents: write|id-token/)
  })

  it('pins every action to a full commit SHA with its version in a comment, the same SHA for the same action', () => {
    const pinned = new Map<string, string>()
    for (const file of FILES) {
      const lines = text[file].split('\n').filter((line) => /^\s*-?\s*uses:/.test(line))
      expect(lines.length).toBeGreaterThan(0)
      for (const line of lines) {
        const match = /uses: ([\w.-]+\/[\w.-]+)@([0-9a-f]{40}) # v\d+\.\d+\.\d+$/.exec(line)
        expect(match, `${file}: ${line.trim()}`).not.toBeNull()
        const [, action, sha] = match as RegExpExecArray
        expect(pinned.get(action as string) ?? sha, `${action} pinned to one SHA`).toBe(sha)
        pinned.set(action as string, sha as string)
      }
    }
    for (const step of [...steps(ci), ...steps(release), ...steps(docs)])
      if (step.uses) expect(step.uses).toMatch(/^[\w.-]+\/[\w.-]+@[0-9a-f]{40}$/)
    expect([...pinned.keys()].sort()).toEqual([
      'actions/checkout',
      'actions/deploy-pages',
      'actions/download-artifact',
      'actions/setup-node',
      'actions/upload-artifact',
      'actions/upload-pages-artifact',
    ])
  })

  it('runs only commands that exist: package.json scripts, the release flags, and test paths that are in the repository', () => {
    const releaseScript = read('scripts/release.mjs')
    const docsScript = read('scripts/docs.mjs')
    const all = [...commands(ci), ...commands(release), ...commands(docs)]
    const npm = all.filter((command) => /^npm (run|test)\b/.test(command))
    expect(npm.length).toBeGreaterThanOrEqual(6)
    for (const command of npm) {
      const [, script, rest] = /^npm (?:run )?([\w:-]+)(?: -- (.*))?$/.exec(command) ?? []
      expect(manifest.scripts, command).toHaveProperty(script as string)
      if (script === 'release') for (const flag of (rest ?? '').split(' ')) expect(releaseScript, command).toContain(`'${flag}'`)
      if (script === 'docs') for (const flag of (rest ?? '').split(' ')) expect(docsScript, command).toContain(`'${flag}'`)
      if (script === 'test' && rest)
        for (const path of rest.split(' ')) expect(existsSync(join(ROOT, path)), `${command}: ${path}`).toBe(true)
    }
  })

  it("runs the README's two commands, as written, on the packages' oldest Node, then every test file and the release dry run", () => {
    const readme = read('README.md')
    const block = /## Try it from a clone\n\n```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? ''
    const readmeCommands = block.trim().split('\n')
    expect(readmeCommands).toEqual(['npm run demo', 'npm test'])
    const test = ci.jobs.test as Job
    expect(commands({ ...ci, jobs: { test } })).toEqual([...readmeCommands, 'npm run test:all', 'npm run release -- --dry-run'])
    expect(manifest.scripts['test:all']).toBe('node scripts/test.mjs --all')
    expect(manifest.engines.node).toBe('>=20')
    expect(setupNode(test)?.with?.['node-version']).toBe(20)
  })

  it('covers Node 20, 22 and 24 (test:matrix runs the suite on 22 and 24), and Bun, Deno and workerd as jobs of their own', () => {
    const versions = ci.jobs['node-versions'] as Job
    expect(commands({ ...ci, jobs: { versions } })).toEqual(['npm run test:matrix'])
    expect(manifest.scripts['test:matrix']).toBe('node scripts/test.mjs --matrix')
    const matrix = read('test/runtimes/node-versions.mjs')
    expect(matrix).toMatch(/matrix: \{\s*versions: \[[\s\S]*name: 'node22'[\s\S]*name: 'node24'/)
    for (const job of Object.values(ci.jobs)) expect(setupNode(job)?.with?.['node-version']).toBe(20)
    const runtimes = (ci.jobs.runtimes as Job).strategy?.matrix.include ?? []
    expect(runtimes.map((entry) => entry.runtime)).toEqual(['Bun', 'Deno', 'workerd'])
    expect(runtimes.find((e) => e.runtime === 'Bun')?.tests).toContain('examples/bun')
    expect(runtimes.find((e) => e.runtime === 'Deno')?.tests).toContain('examples/deno')
    expect(runtimes.find((e) => e.runtime === 'workerd')?.tests).toContain('test/runtimes/workerd.test.ts')
  })

  it('publishes the checked tarballs with --provenance from Node 24 (npm 11) against the npm registry', () => {
    const check = release.jobs.check as Job
    expect(commands({ ...release, jobs: { check } })).toEqual(['npm run release -- --tag'])
    expect(check.steps.find((s) => s.uses?.startsWith('actions/upload-artifact@'))?.with).toMatchObject({
      name: 'packs',
      path: 'packs/*.tgz',
    })
    const publish = release.jobs.publish as Job
    expect(setupNode(publish)?.with).toEqual({ 'node-version': 24, 'registry-url': 'https://registry.npmjs.org' })
    expect(publish.steps.find((s) => s.uses?.startsWith('actions/download-artifact@'))?.with).toEqual({ name: 'packs', path: 'packs' })
    const run = commands({ ...release, jobs: { publish } })
    expect(run).toContain('npm publish "$tarball" --provenance --access public')
    expect(run.filter((line) => line.startsWith('npm publish'))).toHaveLength(1)
  })

  it('builds the documentation site with npm run docs and publishes it to GitHub Pages on version tags, the publishing job running nothing of the repository', () => {
    expect(Object.keys(docs.on).sort()).toEqual(['push', 'workflow_dispatch'])
    expect(docs.on.push).toEqual({ tags: ['v[0-9]+.[0-9]+.[0-9]+*'] })
    expect(docs.permissions).toEqual({})
    const build = docs.jobs.build as Job
    const deploy = docs.jobs.deploy as Job
    expect(build.permissions).toEqual({ contents: 'read' })
    expect(commands({ ...docs, jobs: { build } })).toEqual(['npm run docs -- --no-serve'])
    expect(manifest.scripts.docs).toBe('node scripts/docs.mjs')
    expect(setupNode(build)?.with?.['node-version']).toBe(20)
    // Built under /<repository>/, where GitHub Pages serves a project; the artifact is what `npm run docs` built.
    expect(build.steps.find((step) => step.run === 'npm run docs -- --no-serve')?.env).toEqual({
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression, not a template
      DOCS_BASE: '/${{ github.event.repository.name }}/',
    })
    expect(read('scripts/docs-serve.mjs')).toContain("join(ROOT, 'docs/.vitepress/dist')")
    expect(build.steps.find((step) => step.uses?.startsWith('actions/upload-pages-artifact@'))?.with).toEqual({
      path: 'docs/.vitepress/dist',
    })
    expect(deploy.needs).toBe('build')
    expect(deploy.permissions).toEqual({ pages: 'write', 'id-token': 'write' })
    expect(deploy.steps.map((step) => step.uses?.split('@')[0])).toEqual(['actions/deploy-pages'])
    expect(commands({ ...docs, jobs: { deploy } })).toEqual([])
  })
})

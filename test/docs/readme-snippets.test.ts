/**
 * Every ```ts and ```js snippet in the root README, the package READMEs and every page of the
 * documentation site (docs/, at any depth) is either quoted whole from a file that a test runs
 * (marked `<!-- snippet: examples/… -->` on the line before the fence, and linked from the page), or
 * type-checked here under the workspace's strict settings against the built packages' types. A
 * snippet marked `<!-- snippet: partial … -->` is neither; there may be at most MAX_PARTIAL of them.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { sitePages } from '../../scripts/docs-site.mjs'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const MAX_PARTIAL = 2
const MARKER = /^<!-- snippet: (.+?) -->$/
/** The runtime, framework and queue recipes that must stay quoted whole somewhere in the docs (each run by its example's test). */
const RUNTIME_RECIPES = [
  'examples/bun/src/server.ts',
  'examples/deno/src/server.ts',
  'examples/cloudflare-worker/src/worker.js',
  'examples/nestjs/src/webhook.controller.ts',
  'examples/nextjs/app/api/hooks/route.ts',
  'examples/sveltekit/src/routes/hooks/+server.ts',
  'examples/nuxt/server/api/hooks.post.ts',
  'examples/astro/src/pages/api/hooks.ts',
  'examples/elysia/src/server.ts',
  'examples/bullmq/src/app.ts',
  'examples/pg-boss/src/app.ts',
  'examples/sqs/src/functions.ts',
  'examples/cloudflare-queues/src/worker.js',
]
/** Where type-checked snippets live, virtually: beside test/node_modules, so the workspace packages resolve. */
const SNIPPET_DIR = join(ROOT, 'test/docs/.snippets')
/** The user's own modules that snippets import (`./db.js`, `./my-store.js`), as declarations. */
const USER_MODULES: Record<string, string> = {
  'db.d.ts': [
    'export declare function markBounced(emailId: string): Promise<void>',
    'export declare function suppress(emailId: string): Promise<void>',
    'export declare function setStatus(emailId: string, status: string): Promise<void>',
  ].join('\n'),
  'app.d.ts':
    "export declare function startApp(secret: string): Promise<{ port: number; store: import('@email-webhooks/core').DedupStore }>",
  'my-store.d.ts':
    "export declare class MyDedupStore implements import('@email-webhooks/core').DedupStore {\n  claim: import('@email-webhooks/core').DedupStore['claim']\n  complete: import('@email-webhooks/core').DedupStore['complete']\n  release: import('@email-webhooks/core').DedupStore['release']\n}",
}

interface Snippet {
  doc: string
  line: number
  lang: 'ts' | 'js'
  code: string
  marker: string | undefined
}

/** The READMEs and the site's pages, as repository paths. */
export function documents(root = ROOT): string[] {
  const packages = readdirSync(join(root, 'packages')).map((name) => `packages/${name}/README.md`)
  return ['README.md', ...packages, ...sitePages(root)].filter((doc) => existsSync(join(root, doc)))
}

/** The ts/js fences of a markdown text, each with the snippet marker on the line before it, if any. */
export function extractSnippets(doc: string, text: string): Snippet[] {
  const lines = text.split('\n')
  const snippets: Snippet[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(ts|js|typescript|javascript)\s*$/.exec(lines[i] ?? '')
    if (!open) continue
    const end = lines.findIndex((line, j) => j > i && line.startsWith('```'))
    if (end < 0) throw new Error(`${doc}:${i + 1}: unclosed code fence`)
    let before = i - 1
    while (before >= 0 && lines[before]?.trim() === '') before--
    const marker = MARKER.exec(lines[before]?.trim() ?? '')?.[1]
    const lang = open[1]?.startsWith('t') ? 'ts' : 'js'
    snippets.push({ doc, line: i + 1, lang, code: lines.slice(i + 1, end).join('\n'), marker })
    i = end
  }
  return snippets
}

/** Type-checks snippets in one program; returns the diagnostics of each, by index. */
export function typeCheck(snippets: { lang: 'ts' | 'js'; code: string }[]): string[][] {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'test/tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
      },
    },
  )
  if (!config) throw new Error('cannot read test/tsconfig.json')
  const options: ts.CompilerOptions = { ...config.options, noEmit: true, allowJs: true, checkJs: true }
  const files = new Map<string, string>()
  for (const [name, text] of Object.entries(USER_MODULES)) files.set(join(SNIPPET_DIR, name), text)
  const names = snippets.map((snippet, i) => {
    const name = join(SNIPPET_DIR, `snippet-${i}.${snippet.lang}`)
    files.set(name, snippet.code)
    return name
  })
  const host = ts.createCompilerHost(options)
  const { fileExists, readFile, getSourceFile, directoryExists } = host
  host.directoryExists = (name) => name === SNIPPET_DIR || (directoryExists?.call(host, name) ?? true)
  host.fileExists = (name) => files.has(name) || fileExists.call(host, name)
  host.readFile = (name) => files.get(name) ?? readFile.call(host, name)
  host.getSourceFile = (name, language, onError, create) => {
    const text = files.get(name)
    return text === undefined ? getSourceFile.call(host, name, language, onError, create) : ts.createSourceFile(name, text, language)
  }
  const program = ts.createProgram(names, options, host)
  const format: ts.FormatDiagnosticsHost = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' }
  return names.map((name) => {
    const source = program.getSourceFile(name)
    const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]
    return diagnostics.map((diagnostic) => ts.formatDiagnostic(diagnostic, format).trim())
  })
}

/** What is wrong with a quoted snippet of a page whose text is `docText`: not whole, not from a tested file, or not linked. */
export function quoteProblems(snippet: Snippet, docText: string): string[] {
  const file = snippet.marker ?? ''
  const problems: string[] = []
  if (!/^(examples|test)\//.test(file)) problems.push(`${file} is not a file of examples/ or test/`)
  else if (snippet.code !== readFileSync(join(ROOT, file), 'utf8').trimEnd()) problems.push(`the snippet is not ${file} as it is`)
  const link = relative(dirname(join(ROOT, snippet.doc)), join(ROOT, file))
  if (!docText.includes(`](${link})`)) problems.push(`the page does not link ${link}`)
  return problems
}

const all = documents().flatMap((doc) => extractSnippets(doc, readFileSync(join(ROOT, doc), 'utf8')))
const quoted = all.filter((snippet) => snippet.marker && !snippet.marker.startsWith('partial'))
const partial = all.filter((snippet) => snippet.marker?.startsWith('partial'))
const checked = all.filter((snippet) => !snippet.marker)

describe('documentation snippets', () => {
  it('finds the snippets of every README and every page of the site', () => {
    // Every page that shows code is found (the CLI's README shows only shell commands), in every folder of the site.
    const found = new Set(all.map((snippet) => snippet.doc))
    for (const doc of [
      'README.md',
      'docs/index.md',
      'docs/design.md',
      'docs/queues.md',
      'docs/console.md',
      ...['express', 'hono', 'fastify', 'koa', 'lambda', 'cloudflare-workers', 'web-standard', 'nextjs', 'nestjs', 'bun', 'deno'].map(
        (page) => `docs/getting-started/${page}.md`,
      ),
      ...['verification', 'ordering', 'inbox-mode', 'recovery'].map((page) => `docs/concepts/${page}.md`),
      ...[
        'testing-handlers',
        'cli',
        'stores',
        'many-instances',
        'serverless-stores',
        'custom-store',
        'observability',
        'bullmq',
        'pg-boss',
      ].map((page) => `docs/guides/${page}.md`),
      ...['core', 'express', 'hono', 'fastify', 'koa', 'lambda', 'cloudflare', 'bullmq', 'pg-boss'].map((p) => `packages/${p}/README.md`),
    ]) {
      expect(found).toContain(doc)
    }
    for (const doc of found) expect(documents()).toContain(doc)
    expect(checked.length).toBeGreaterThan(5)
  })

  for (const snippet of quoted) {
    it(`${snippet.doc}:${snippet.line} quotes ${snippet.marker} whole and links it`, () => {
      expect(quoteProblems(snippet, readFileSync(join(ROOT, snippet.doc), 'utf8'))).toEqual([])
    })
  }

  it(`keeps deliberately partial snippets few (at most ${MAX_PARTIAL})`, () => {
    expect(partial.map((snippet) => `${snippet.doc}:${snippet.line}`).length).toBeLessThanOrEqual(MAX_PARTIAL)
  })

  it('quotes the runtime and framework recipes whole, from the examples their tests run', () => {
    expect(RUNTIME_RECIPES.filter((file) => !quoted.some((snippet) => snippet.marker === file))).toEqual([])
  })

  it('type-checks every other snippet under strict against the built packages', () => {
    const results = typeCheck(checked)
    const failures = checked.flatMap((snippet, i) =>
      (results[i] ?? []).length ? [`${snippet.doc}:${snippet.line}\n${(results[i] ?? []).join('\n')}`] : [],
    )
    expect(failures).toEqual([])
    // One tsc run over every snippet: about 30 s on a quiet machine, past 60 s at a load average of 13.
  }, 180_000)

  it('shows where an inbox-mode handler is mounted, in both inbox snippets of the Inbox mode page', () => {
    const inbox = checked.filter((snippet) => snippet.doc === 'docs/concepts/inbox-mode.md' && snippet.code.includes("mode: 'inbox'"))
    expect(inbox.map((snippet) => snippet.doc)).toEqual(['docs/concepts/inbox-mode.md', 'docs/concepts/inbox-mode.md'])
    for (const snippet of inbox)
      expect([`${snippet.doc}:${snippet.line}`, snippet.code]).toEqual([
        expect.any(String),
        expect.stringMatching(/\.post\('\/hooks', hooks\)/),
      ])
  })

  it('fails on a snippet of a page that no longer compiles, and on a quoted one that is no longer its file', () => {
    const page = 'docs/getting-started/express.md'
    const [snippet] = checked.filter((s) => s.doc === page)
    expect(snippet?.code).toContain('emailWebhook(secret, {')
    const broken = (snippet?.code ?? '').replace('import { emailWebhook } from', 'import { emailWebhooks } from')
    expect(broken).not.toBe(snippet?.code)
    const [result] = typeCheck([{ lang: snippet?.lang ?? 'js', code: broken }])
    expect(result?.join('\n')).toMatch(/has no exported member named 'emailWebhooks'/)
    const recipe = quoted.find((s) => s.doc === 'docs/getting-started/nextjs.md')
    if (!recipe) throw new Error('the Next.js page quotes its recipe')
    const text = readFileSync(join(ROOT, recipe.doc), 'utf8')
    expect(quoteProblems(recipe, text)).toEqual([])
    expect(quoteProblems({ ...recipe, code: recipe.code.replace('markBounced', 'markBouncedLater') }, text)).toEqual([
      'the snippet is not examples/nextjs/app/api/hooks/route.ts as it is',
    ])
    expect(quoteProblems(recipe, text.replaceAll('](../../examples/nextjs/app/api/hooks/route.ts)', '](../../examples/nextjs/)'))).toEqual([
      'the page does not link ../../examples/nextjs/app/api/hooks/route.ts',
    ])
  }, 60_000)

  it('the checker refuses the old "What one call does" snippet (no import, undefined actions, env under strict)', () => {
    const old = [
      "app.post('/hooks', emailWebhook(process.env.EMAIL_WEBHOOK_SECRET, {",
      "  'email.bounced': async (event) => actions.markBounced(event.data.id),",
      '}))',
    ].join('\n')
    const fixedImports = "import express from 'express'\nimport { emailWebhook } from '@email-webhooks/express'\nconst app = express()\n"
    const [bare, imported] = typeCheck([
      { lang: 'ts', code: old },
      { lang: 'ts', code: fixedImports + old },
    ])
    expect(bare?.join('\n')).toMatch(/Cannot find name 'app'/)
    expect(imported?.join('\n')).toMatch(/Cannot find name 'actions'/)
    expect(imported?.join('\n')).toMatch(/'string \| undefined' is not assignable/)
  }, 60_000)
})

/**
 * Inline claims about what a handler can do with its context (`ctx.c.req.json()`, `ctx.order`):
 * every inline code span that starts with `ctx.` in the page about one adapter (which holds what
 * that adapter's README and the root README's section about it said) compiles as an expression
 * inside that adapter's handler.
 */
const CONTEXT_PAGES: { adapter: 'express' | 'hono'; doc: string; section?: RegExp }[] = [
  { adapter: 'hono', doc: 'docs/getting-started/hono.md' },
  { adapter: 'express', doc: 'docs/getting-started/express.md' },
]

/** The inline `ctx.…` spans of `doc` (of its section, when given), and any `c.req…` span claimed for handlers. */
function contextClaims(doc: string, section?: RegExp): string[] {
  let text = readFileSync(join(ROOT, doc), 'utf8')
  if (section) {
    const lines = text.split('\n')
    const start = lines.findIndex((line) => section.test(line))
    const end = lines.findIndex((line, i) => i > start && line.startsWith('## '))
    text = lines.slice(start, end < 0 ? undefined : end).join('\n')
  }
  return [...text.matchAll(/`(ctx\.[^`]+)`/g)].map((match) => match[1] as string)
}

describe('inline claims about the handler context', () => {
  it("compiles every `ctx.…` the adapter pages name, inside that adapter's handler", () => {
    const claims = CONTEXT_PAGES.flatMap(({ adapter, doc, section }) =>
      contextClaims(doc, section).map((claim) => ({ adapter, doc, claim })),
    )
    expect(claims.map((c) => c.claim)).toContain('ctx.c.req.json()')
    const code = ({ adapter, claim }: { adapter: 'express' | 'hono'; claim: string }) =>
      [
        `import { emailWebhook } from '@email-webhooks/${adapter}'`,
        `export const handler = emailWebhook('whsec_x', { 'email.bounced': async (event, ctx) => { void event; void (${claim}) } })`,
      ].join('\n')
    const results = typeCheck(claims.map((claim) => ({ lang: 'ts' as const, code: code(claim) })))
    const failures = claims.flatMap((claim, i) =>
      (results[i] ?? []).length ? [`${claim.doc}: ${claim.claim}\n${results[i]?.join('\n')}`] : [],
    )
    expect(failures).toEqual([])
  }, 60_000)

  it('the check refuses the old claim `c.req.json()` in a handler (the root README made it once)', () => {
    const [result] = typeCheck([
      {
        lang: 'ts',
        code: "import { emailWebhook } from '@email-webhooks/hono'\nexport const handler = emailWebhook('whsec_x', { 'email.bounced': async (event, ctx) => { void event; void ctx; void (c.req.json()) } })",
      },
    ])
    expect(result?.join('\n')).toMatch(/Cannot find name 'c'/)
  }, 60_000)
})

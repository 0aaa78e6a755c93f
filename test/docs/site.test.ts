/**
 * The documentation site, built and used for real (long tier: `npm run test:all`): VitePress builds
 * docs/ into a temporary folder (scripts/docs-serve.mjs, what `npm run docs` runs), the site is
 * served on 127.0.0.1, and Debian's Chromium (test/console/browser.ts; nothing downloads a browser)
 * opens every page: each internal link leads to a page that answers 200 and each #anchor to an
 * element of that page, every built page is reached, no page logs a console error, and no request
 * leaves 127.0.0.1. Searches find the right pages among their first ten results, offline. A copy of the built site with a broken
 * link and a script that logs an error proves that both are caught; the markdown plugin of the
 * build refuses a broken link. The same site built under a base path (as GitHub Pages serves a
 * project) keeps its links. With UPDATE_SCREENSHOTS=1 the screenshots of the home page and a guide
 * are written to docs/screenshots/ (else to a temporary folder).
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildSite, serveSite } from '../../scripts/docs-serve.mjs'
import { ROOT, siteVersion } from '../../scripts/docs-site.mjs'
import { launchChromium } from '../console/browser.js'
import { scaled } from '../support/time.js'

const dir = mkdtempSync(join(tmpdir(), 'docs-site-'))
const DIST = join(dir, 'dist')
const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? join(ROOT, 'docs/screenshots') : join(dir, 'shots')
mkdirSync(SHOTS, { recursive: true })
let browser: Browser
let site: { url: string; close: () => Promise<void> }

beforeAll(async () => {
  const started = performance.now()
  const [build, chromium] = await Promise.all([buildSite({ outDir: DIST, quiet: true }), launchChromium()])
  browser = chromium
  expect(build.code, build.output.slice(-4000)).toBe(0)
  console.log(`site built in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  site = await serveSite(DIST)
}, scaled(240_000))
afterAll(async () => {
  await browser?.close()
  await site?.close()
  rmSync(dir, { recursive: true, force: true })
})

/** Every page of a built site, as the paths a browser asks for (`/guides/cli.html`). */
function builtPages(root: string): string[] {
  const out: string[] = []
  const walk = (folder: string) => {
    for (const name of readdirSync(folder)) {
      const full = join(folder, name)
      if (statSync(full).isDirectory()) walk(full)
      else if (name.endsWith('.html') && name !== '404.html') out.push(`/${relative(root, full).split('\\').join('/')}`)
    }
  }
  walk(root)
  return out.sort()
}

interface CrawlResult {
  visited: Set<string>
  /** Links that lead to no page, or to an anchor that is not on it: `from → to: why`. */
  broken: string[]
  /** Console errors and uncaught exceptions, with the page they happened on. */
  errors: string[]
  /** Requests that left the site's server. */
  external: string[]
}

/**
 * Opens `start` in Chromium and every internal page it links to, and so on, `depth` links deep
 * (all of them by default); checks each link's page (200) and anchor (an element with that id).
 */
async function crawl(base: string, start: string[], { depth = Number.POSITIVE_INFINITY } = {}): Promise<CrawlResult> {
  const origin = new URL(base).origin
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const result: CrawlResult = { visited: new Set(), broken: [], errors: [], external: [] }
  await context.route('**/*', (route) => {
    const url = route.request().url()
    if (url.startsWith(origin)) return route.continue()
    result.external.push(url)
    return route.abort()
  })
  const page = await context.newPage()
  let current = ''
  page.on('console', (message) => {
    if (message.type() === 'error') result.errors.push(`${current}: ${message.text()}`)
  })
  page.on('pageerror', (error) => result.errors.push(`${current}: ${error.message}`))
  const ids = new Map<string, Set<string>>()
  const links: { from: string; path: string; hash: string }[] = []
  const queue = start.map((path) => ({ path, from: '(start)', level: 0 }))
  while (queue.length > 0) {
    const { path, from, level } = queue.shift() as { path: string; from: string; level: number }
    if (result.visited.has(path)) continue
    result.visited.add(path)
    current = path
    if (!/\.html$|\/$/.test(path)) {
      // A file, not a page (an image): it must be there.
      const status = (await page.request.get(origin + path)).status()
      if (status !== 200) result.broken.push(`${from} → ${path}: ${status}`)
      continue
    }
    const response = await page.goto(origin + path, { waitUntil: 'load' })
    if (response?.status() !== 200) {
      result.broken.push(`${from} → ${path}: ${response?.status()}`)
      continue
    }
    // Hydrated: the app is mounted (a hydration mismatch is logged before this).
    await page.waitForFunction(() => (document.getElementById('app') as { __vue_app__?: unknown } | null)?.__vue_app__ !== undefined)
    ids.set(path, new Set(await page.$$eval('[id]', (elements) => elements.map((element) => element.id))))
    const hrefs = await page.$$eval('a[href]', (anchors) => anchors.map((anchor) => (anchor as HTMLAnchorElement).href))
    for (const href of hrefs) {
      const url = new URL(href)
      if (url.origin !== origin) continue
      links.push({ from: path, path: url.pathname, hash: decodeURIComponent(url.hash.slice(1)) })
      if (level < depth) queue.push({ path: url.pathname, from: path, level: level + 1 })
    }
  }
  for (const link of links) {
    if (!link.hash) continue
    const on = ids.get(link.path)
    if (on && !on.has(link.hash)) result.broken.push(`${link.from} → ${link.path}#${link.hash}: no element with that id`)
  }
  await context.close()
  return result
}

describe('the documentation site in a browser', () => {
  it(
    'follows every internal link of every page: each page answers 200, each anchor is on its page, no console error, nothing from outside',
    async () => {
      const started = performance.now()
      const result = await crawl(site.url, ['/'])
      console.log(`${result.visited.size} pages and files visited in ${((performance.now() - started) / 1000).toFixed(1)} s`)
      expect(result.broken).toEqual([])
      expect(result.errors).toEqual([])
      expect(result.external).toEqual([])
      // Every page the build wrote is reached from the home page.
      const pages = builtPages(DIST)
      expect(pages.length).toBeGreaterThan(100)
      expect(pages.filter((page) => !result.visited.has(page) && !result.visited.has(page.replace(/index\.html$/, '')))).toEqual([])
    },
    scaled(600_000),
  )

  it(
    'says which version it documents, on every page',
    async () => {
      const context = await browser.newContext()
      const page = await context.newPage()
      for (const path of ['/', '/guides/cli.html', '/reference/options.html']) {
        await page.goto(site.url.replace(/\/$/, '') + path)
        expect(await page.locator('.VPFooter').textContent()).toContain(
          `This site documents version ${siteVersion()} of the email-webhooks packages.`,
        )
      }
      expect(await page.locator('.VPNavBar').textContent()).toContain(`v${siteVersion()}`)
      await context.close()
    },
    scaled(60_000),
  )

  it(
    'finds the right page among the first ten results of a search, offline',
    async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
      const external: string[] = []
      await context.route('**/*', (route) => {
        if (route.request().url().startsWith(site.url)) return route.continue()
        external.push(route.request().url())
        return route.abort()
      })
      const page = await context.newPage()
      await page.goto(site.url)
      const ask = async (query: string): Promise<void> => {
        await page.locator('.DocSearch-Button').click()
        const input = page.locator('.VPLocalSearchBox input.search-input')
        const first = page.locator('.VPLocalSearchBox ul.results a.result').first()
        // The box keeps the last query (session storage) and shows its results when it opens;
        // the new query's results come after a 200 ms debounce. Empty it and wait for no results
        // first, so the results read are this query's, not the last one's (a loaded machine read
        // the last query's results once).
        await input.fill('')
        await first.waitFor({ state: 'detached', timeout: scaled(10_000) })
        await input.fill(query)
        await first.waitFor({ timeout: scaled(10_000) })
      }
      const search = async (query: string): Promise<string[]> => {
        await ask(query)
        const found = await page
          .locator('.VPLocalSearchBox ul.results a.result')
          .evaluateAll((as) => as.map((a) => new URL((a as HTMLAnchorElement).href).pathname))
        await page.keyboard.press('Escape')
        return found.slice(0, 10)
      }
      for (const [query, expected] of [
        ['skipStale', '/concepts/ordering.html'],
        ['DynamoDB table', '/guides/serverless-stores.html'],
        ['retry dead letters', '/guides/cli.html'],
        ["operator's console", '/console.html'],
        ['signature_mismatch', '/reference/errors.html'],
        ['rehearse a recovery', '/guides/cli.html'],
      ] as const) {
        expect([query, await search(query)]).toEqual([query, expect.arrayContaining([expected])])
      }
      const shot = join(SHOTS, 'search.png')
      await ask('retry dead letters')
      await page.screenshot({ path: shot })
      expect(statSync(shot).size).toBeGreaterThan(10_000)
      expect(external).toEqual([])
      await context.close()
    },
    scaled(120_000),
  )

  it(
    'takes the screenshots of the home page and of a guide',
    async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
      const page = await context.newPage()
      for (const [name, path] of [
        ['home', '/'],
        ['guide', '/concepts/inbox-mode.html'],
      ] as const) {
        await page.goto(site.url.replace(/\/$/, '') + path, { waitUntil: 'networkidle' })
        await page.screenshot({ path: join(SHOTS, `${name}.png`) })
        expect(statSync(join(SHOTS, `${name}.png`)).size).toBeGreaterThan(10_000)
      }
      await context.close()
    },
    scaled(60_000),
  )
})

describe('bad input', () => {
  it(
    'a copy of the site with a link to a missing page and a script that logs an error fails the crawl',
    async () => {
      const copy = join(dir, 'broken')
      cpSync(DIST, copy, { recursive: true })
      const file = join(copy, 'guides/cli.html')
      const html = readFileSync(file, 'utf8')
      expect(html).toContain('</body>')
      writeFileSync(
        file,
        html.replace(
          '</body>',
          '<a href="/guides/no-such-page.html">gone</a><a href="/reference/options.html#no-such-option">gone too</a><script>console.error("something broke")</script></body>',
        ),
      )
      const broken = await serveSite(copy)
      try {
        // Every link of that page, followed: the missing page is a 404, the anchor is not on its page.
        const result = await crawl(broken.url, ['/guides/cli.html'], { depth: 1 })
        expect(result.visited.size).toBeGreaterThan(40)
        expect(result.broken).toEqual([
          '/guides/cli.html → /guides/no-such-page.html: 404',
          '/guides/cli.html → /reference/options.html#no-such-option: no element with that id',
        ])
        expect(result.errors).toEqual([
          '/guides/cli.html: something broke',
          '/guides/no-such-page.html: Failed to load resource: the server responded with a status of 404 (Not Found)',
        ])
      } finally {
        await broken.close()
      }
    },
    scaled(120_000),
  )

  it(
    'the build refuses a page whose link leads nowhere, naming the page and the link',
    async () => {
      const { createMarkdownRenderer } = (await import(resolve(ROOT, 'docs/node_modules/vitepress/dist/node/index.js'))) as {
        createMarkdownRenderer: (srcDir: string, options: object) => Promise<{ render: (src: string, env: object) => string }>
      }
      const { siteLinks } = await import('../../docs/.vitepress/links.mjs')
      const md = await createMarkdownRenderer(join(ROOT, 'docs'), { config: siteLinks })
      const ok = md.render('[Options](../reference/options.md#webhookoptions) and [the app](../../examples/express/src/app.js)', {
        relativePath: 'guides/stores.md',
      })
      expect(ok).toContain('href="/reference/options.html#webhookoptions"')
      expect(ok).toContain('href="/source/examples/express/src/app.js.html"')
      expect(() => md.render('[Options](../reference/option.md)', { relativePath: 'guides/stores.md' })).toThrow(
        'docs/guides/stores.md: the link ../reference/option.md is broken: no such file',
      )
      expect(existsSync(join(DIST, 'source/examples/express/src/app.js.html'))).toBe(true)
    },
    scaled(60_000),
  )
})

describe('under a base path, as GitHub Pages serves a project', () => {
  it(
    'keeps every link of a guide inside the base, and each leads to a page',
    async () => {
      const based = join(dir, 'based')
      const build = await buildSite({ outDir: based, quiet: true, env: { DOCS_BASE: '/email-webhooks/' } })
      expect(build.code, build.output.slice(-4000)).toBe(0)
      // Served as GitHub Pages serves it: the site's files under /email-webhooks/.
      const root = join(dir, 'pages')
      cpSync(based, join(root, 'email-webhooks'), { recursive: true })
      const pages = await serveSite(root)
      try {
        // Every link of a guide, followed: each page (the sidebar links them all) answers under the base.
        const result = await crawl(`${pages.url}email-webhooks/`, ['/email-webhooks/guides/cli.html'], { depth: 1 })
        expect(result.visited.size).toBeGreaterThan(40)
        expect([...result.visited].filter((path) => !path.startsWith('/email-webhooks/'))).toEqual([])
        expect(result.broken).toEqual([])
        expect(result.errors).toEqual([])
        const html = readFileSync(join(based, 'guides/cli.html'), 'utf8')
        const hrefs = [...html.matchAll(/href="(\/[^"]*)"/g)].map((match) => match[1] as string)
        expect(hrefs.length).toBeGreaterThan(20)
        expect(hrefs.filter((href) => !href.startsWith('/email-webhooks/'))).toEqual([])
      } finally {
        await pages.close()
      }
    },
    scaled(300_000),
  )
})

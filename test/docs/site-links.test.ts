/**
 * The documentation site's links, without building it: every link of every page (docs/, at any
 * depth), of the READMEs and of the Markdown files the site shows under /source/ leads to a file
 * that exists, and its #anchor to a heading of that page (GitHub's anchors, which the site uses
 * too); every page is in the sidebar once; the site documents the packages' one version. Broken
 * copies of a page prove that a missing page, a missing heading and a link to a folder fail.
 * (The built site's links, followed in a browser: site.test.ts.)
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { sidebarGroups, siteLink } from '../../docs/.vitepress/sidebar.mjs'
import { publishedPackages } from '../../scripts/api-report.mjs'
import {
  anchorsOf,
  checkLinks,
  headingText,
  ROOT,
  resolveLink,
  sitePages,
  siteVersion,
  slugOf,
  sourceFiles,
} from '../../scripts/docs-site.mjs'

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8')
/** checkLinks over the repository, with `file` read as `text` instead. */
const checkWith = (file: string, text: string): string[] => checkLinks(ROOT, { read: (f) => (f === file ? text : read(f)) })

describe('the links of the documentation', () => {
  it('every link of every page and README leads to a file, and every anchor to a heading', () => {
    expect(sitePages().length).toBeGreaterThan(40)
    expect(checkLinks()).toEqual([])
  })

  it('reads anchors as GitHub does (the site names its headings the same way)', () => {
    expect(slugOf(headingText('Recovering a disabled endpoint (`@email-webhooks/core/api`)'))).toBe(
      'recovering-a-disabled-endpoint-email-webhookscoreapi',
    )
    expect(slugOf(headingText('`inbox work --handlers <module>`'))).toBe('inbox-work---handlers-module')
    expect(slugOf(headingText("Deadlines and the sender's 10 s"))).toBe('deadlines-and-the-senders-10-s')
    // A repeated heading gets -1, as on GitHub; headings inside code blocks are no headings.
    expect([...anchorsOf('## Errors\n\n```md\n## Not a heading\n```\n\n## Errors\n')]).toEqual(['errors', 'errors-1'])
  })

  it('resolves links as GitHub does: pages stay pages, other files of the repository are shown under /source/', () => {
    expect(resolveLink('docs/guides/cli.md', '../reference/cli.md#exit-codes')).toMatchObject({
      kind: 'page',
      href: '/reference/cli.md#exit-codes',
    })
    expect(resolveLink('docs/getting-started/nextjs.md', '../../examples/nextjs/app/api/hooks/route.ts')).toMatchObject({
      kind: 'source',
      href: '/source/examples/nextjs/app/api/hooks/route.ts.md',
    })
    expect(sourceFiles()).toEqual(expect.arrayContaining(['examples/express/src/app.js', 'bench/RESULTS.md']))
    expect(sourceFiles().filter((file) => file.startsWith('docs/'))).toEqual([])
  })

  it('fails on a link to a page that does not exist, naming the page, the line and the link', () => {
    const page = 'docs/guides/cli.md'
    const text = read(page).replace('(../reference/cli.md#exit-codes)', '(../reference/cli-commands.md#exit-codes)')
    const problems = checkWith(page, text)
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatch(/^docs\/guides\/cli\.md:\d+: \.\.\/reference\/cli-commands\.md#exit-codes: no such file$/)
  })

  it('fails on an anchor that is no heading of its page', () => {
    const page = 'docs/concepts/recovery.md'
    const text = `${read(page)}\nSee [the options](../reference/options.md#recoverendpointoption).\n`
    expect(checkWith(page, text)).toEqual([expect.stringMatching(/: no heading "#recoverendpointoption" in docs\/reference\/options\.md$/)])
    const same = `${read(page)}\nSee [above](#the-clients).\n`
    expect(checkWith(page, same)).toEqual([
      expect.stringMatching(/#the-clients: no heading "#the-clients" in docs\/concepts\/recovery\.md$/),
    ])
  })

  it('fails on a link to a folder, out of the repository, by absolute path or to nowhere; and in a README too', () => {
    const page = 'docs/getting-started/index.md'
    const text = `${read(page)}\n[a](../../examples/express) [b](../../../etc/passwd) [c](/guides/cli.md) [d](#)\n`
    expect(checkWith(page, text)).toEqual([
      expect.stringMatching(/\.\.\/\.\.\/examples\/express: a folder: link one of its files$/),
      expect.stringMatching(/\.\.\/\.\.\/\.\.\/etc\/passwd: leads outside the repository$/),
      expect.stringMatching(/\/guides\/cli\.md: an absolute path: write links relative to the page, as on GitHub$/),
      expect.stringMatching(/: #: a link to nowhere \(#\): name a heading or a page$/),
    ])
    const readme = read('packages/core/README.md').replace('(../../docs/moved.md#', '(../../docs/moved.md#no-such-section-')
    expect(checkWith('packages/core/README.md', readme)).toEqual([expect.stringMatching(/^packages\/core\/README\.md:\d+: .*no heading/)])
  })
})

describe('the navigation', () => {
  it('lists every page in the sidebar exactly once (the home page apart), and only pages', () => {
    const listed = sidebarGroups().flatMap((group) => group.items.map(([, page]) => page))
    expect(listed.filter((page, i) => listed.indexOf(page) !== i)).toEqual([])
    expect([...listed].sort()).toEqual(sitePages().filter((page) => page !== 'docs/index.md'))
    expect(siteLink('docs/reference/index.md')).toBe('/reference/')
    expect(siteLink('docs/guides/cli.md')).toBe('/guides/cli')
  })

  it('documents the version every published package has', () => {
    const versions = new Set(publishedPackages().map(({ manifest }) => manifest.version))
    expect([...versions]).toEqual([siteVersion()])
    expect(read('docs/.vitepress/config.mts')).toMatch(/This site documents version \$\{version\}/)
  })
})

// The documentation site: the Markdown pages of docs/, built by VitePress (npm run docs builds it
// and serves it on 127.0.0.1). Search is VitePress's local search: the index is built with the site
// and searched in the browser, so nothing calls an outside service. Headings get GitHub's anchors,
// and relative links are resolved as on GitHub (scripts/docs-site.mjs), so every page reads the same
// in the repository and in the site.
import type MarkdownIt from 'markdown-it'
import { defineConfig } from 'vitepress'
import { pageRepoPath, resolveLink, siteVersion, slugOf } from '../../scripts/docs-site.mjs'
import { sidebar } from './sidebar.mjs'

const version = siteVersion()

/**
 * Rewrites each relative link of a page to where it leads in the site (a page, or the /source/ page
 * of a repository file), and fails the build on a link that leads nowhere.
 */
function siteLinks(md: MarkdownIt): void {
  md.core.ruler.push('site_links', (state) => {
    const relativePath: string | undefined = state.env?.relativePath
    if (!relativePath) return
    const from = pageRepoPath(relativePath)
    for (const block of state.tokens) {
      for (const token of block.children ?? []) {
        if (token.type !== 'link_open') continue
        const href = token.attrGet('href')
        if (!href || href.startsWith('#')) continue
        const target = resolveLink(from, href)
        if (target.problem) throw new Error(`${from}: the link ${href} is broken: ${target.problem}`)
        if (target.kind === 'page' || target.kind === 'source') token.attrSet('href', target.href)
        else if (target.kind === 'asset') token.attrSet('href', `/${target.repoPath.replace(/^docs\//, '')}`)
      }
    }
  })
}

export default defineConfig({
  title: 'email-webhooks',
  titleTemplate: `:title · email-webhooks ${version}`,
  description: "Receive a transactional email service's webhooks correctly: signature check, durable dedup, typed handlers.",
  lang: 'en',
  // GitHub Pages serves a project's site under /<repository>/: the deploy workflow sets DOCS_BASE.
  base: process.env.DOCS_BASE ?? '/',
  srcExclude: ['**/node_modules/**'],
  outDir: '.vitepress/dist',
  cacheDir: '.vitepress/cache',
  lastUpdated: false,
  markdown: {
    anchor: { slugify: slugOf },
    headers: { slugify: slugOf },
    config: (md) => siteLinks(md),
  },
  themeConfig: {
    siteTitle: 'email-webhooks',
    nav: [
      { text: 'Getting started', link: '/getting-started/' },
      { text: 'Concepts', link: '/concepts/verification' },
      { text: 'Guides', link: '/guides/testing-handlers' },
      { text: 'Reference', link: '/reference/' },
      { text: `v${version}`, link: '/releasing' },
    ],
    sidebar: sidebar(),
    outline: { level: [2, 3] },
    search: { provider: 'local' },
    footer: { message: `This site documents version ${version} of the email-webhooks packages. MIT License.` },
  },
})

// The documentation site: the Markdown pages of docs/, built by VitePress (npm run docs builds it
// and serves it on 127.0.0.1). Search is VitePress's local search: the index is built with the site
// and searched in the browser, so nothing calls an outside service. Headings get GitHub's anchors,
// and relative links are resolved as on GitHub (scripts/docs-site.mjs), so every page reads the same
// in the repository and in the site.
import { defineConfig } from 'vitepress'
import { siteVersion, slugOf } from '../../scripts/docs-site.mjs'
import { siteLinks } from './links.mjs'
import { sidebar } from './sidebar.mjs'

const version = siteVersion()
// GitHub Pages serves a project's site under /<repository>/: the deploy workflow sets DOCS_BASE.
const base = process.env.DOCS_BASE ?? '/'

export default defineConfig({
  title: 'email-webhooks',
  titleTemplate: `:title · email-webhooks ${version}`,
  description: "Receive a transactional email service's webhooks correctly: signature check, durable dedup, typed handlers.",
  lang: 'en',
  base,
  head: [['link', { rel: 'icon', type: 'image/svg+xml', href: `${base}favicon.svg` }]],
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

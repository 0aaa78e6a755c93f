// The site's links, as markdown-it sees them: each relative link of a page is rewritten to where it
// leads in the site (a page, or the /source/ page of a repository file), and a link that leads
// nowhere fails the build, naming the page and the link (scripts/docs-site.mjs resolves them).
import { pageRepoPath, resolveLink } from '../../scripts/docs-site.mjs'

/** The markdown-it plugin of the site's config. */
export function siteLinks(md) {
  md.core.ruler.push('site_links', (state) => {
    const relativePath = state.env?.relativePath
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

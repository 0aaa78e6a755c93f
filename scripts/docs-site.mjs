// The documentation site's pages and links, shared by its VitePress config (docs/.vitepress),
// `npm run docs` and the tests, and needing nothing but Node:
//
// - which Markdown files are pages (every .md under docs/, at any depth);
// - where a relative link leads in the site: a page of docs/ stays a page; a file of the repository
//   outside docs/ (an example the page quotes, a test it names, bench/RESULTS.md) becomes a page of
//   its own under /source/, so the site holds every file its pages link to, at the version it
//   documents, and works offline;
// - every heading's anchor, computed as GitHub computes it (github-slugger), which is also how the
//   site's config names its headings: a link's `#anchor` is the same on GitHub and in the site;
// - `checkLinks()`: every link and anchor of every page checked without building anything.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, posix, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { slug } from 'github-slugger'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
/** Where the pages are, relative to the repository's root. */
export const DOCS_DIR = 'docs'
/** The folder of the site that shows the repository's other files, one page each. */
export const SOURCE_DIR = 'source'
/** The page that shows a repository file (a dynamic route: docs/source/[path].md). */
export const SOURCE_ROUTE = `${DOCS_DIR}/${SOURCE_DIR}/[path].md`
/** Folders of docs/ that hold no pages: the site's config and build, and installed packages. */
const NOT_PAGES = new Set(['node_modules', '.vitepress'])

/** The version the site documents: the packages' one version (they are released together). */
export function siteVersion(root = ROOT) {
  return JSON.parse(readFileSync(join(root, 'packages/core/package.json'), 'utf8')).version
}

/** Every page: the .md files under docs/, as repository paths (`docs/guides/many-instances.md`), sorted. */
export function sitePages(root = ROOT) {
  const pages = []
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`
      if (entry.isDirectory()) {
        if (!NOT_PAGES.has(entry.name)) walk(path)
      } else if (entry.name.endsWith('.md') && path !== SOURCE_ROUTE) pages.push(path)
    }
  }
  walk(DOCS_DIR)
  return pages.sort()
}

/** The READMEs, which link into the site's pages: the root one and one per package. */
export function readmes(root = ROOT) {
  const packages = readdirSync(join(root, 'packages'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `packages/${entry.name}/README.md`)
  return ['README.md', ...packages].filter((file) => existsSync(join(root, file)))
}

/**
 * The repository path whose folder a page's relative links start from: the page's own file, or,
 * for a page under /source/, the file it shows. `relativePath` is VitePress's (relative to docs/).
 */
export function pageRepoPath(relativePath, root = ROOT) {
  const prefix = `${SOURCE_DIR}/`
  if (!relativePath.startsWith(prefix)) return `${DOCS_DIR}/${relativePath}`
  // A Markdown file keeps its name (source/bench/README.md); any other has `.md` added (source/…/app.js.md).
  const shown = relativePath.slice(prefix.length)
  return existsSync(join(root, shown)) ? shown : shown.replace(/\.md$/, '')
}

/** The site path (without `.html`, from the site's root) of the page that shows repository file `repoPath`. */
export function sourcePagePath(repoPath) {
  return `/${SOURCE_DIR}/${repoPath.endsWith('.md') ? repoPath : `${repoPath}.md`}`
}

const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i

/**
 * Where a link written in repository file `from` leads.
 * - `external`: another site (or `mailto:`); not checked.
 * - `anchor`: `#x` on the same page.
 * - `page`: a page of the site (`href` is its site path, with the anchor).
 * - `asset`: a file under docs/ that is not a page (a screenshot).
 * - `source`: a file of the repository outside docs/, shown by a page under /source/.
 * - `missing`, `directory`, `outside`: a broken link (`problem` says why).
 */
export function resolveLink(from, href, root = ROOT) {
  if (EXTERNAL.test(href) || href.startsWith('//')) return { kind: 'external' }
  const hashAt = href.indexOf('#')
  const path = hashAt < 0 ? href : href.slice(0, hashAt)
  const hash = hashAt < 0 ? '' : decodeURIComponent(href.slice(hashAt + 1))
  if (path === '' && hash === '') return { kind: 'missing', repoPath: from, problem: 'a link to nowhere (#): name a heading or a page' }
  if (path === '') return { kind: 'anchor', repoPath: from, hash }
  if (path.startsWith('/'))
    return { kind: 'missing', repoPath: path, problem: 'an absolute path: write links relative to the page, as on GitHub' }
  const repoPath = posix.normalize(posix.join(posix.dirname(from), decodeURI(path)))
  if (repoPath.startsWith('../') || repoPath === '..') return { kind: 'outside', repoPath, problem: 'leads outside the repository' }
  const full = join(root, repoPath)
  if (!existsSync(full)) return { kind: 'missing', repoPath, problem: 'no such file' }
  if (statSync(full).isDirectory()) return { kind: 'directory', repoPath, problem: 'a folder: link one of its files' }
  const suffix = hash ? `#${hash}` : ''
  if (repoPath.startsWith(`${DOCS_DIR}/`)) {
    if (repoPath.endsWith('.md')) return { kind: 'page', repoPath, hash, href: `/${repoPath.slice(DOCS_DIR.length + 1)}${suffix}` }
    return { kind: 'asset', repoPath, hash }
  }
  return { kind: 'source', repoPath, hash, href: `${sourcePagePath(repoPath)}${suffix}` }
}

/** Lines of a Markdown text with fenced code blocks blanked, so that nothing inside them counts. */
export function proseLines(text) {
  const lines = text.split('\n')
  let fence
  return lines.map((line) => {
    const open = /^\s*(`{3,}|~{3,})/.exec(line)
    if (fence) {
      if (open && open[1][0] === fence[0] && open[1].length >= fence.length && line.trim() === open[1]) fence = undefined
      return ''
    }
    if (open) {
      fence = open[1]
      return ''
    }
    return line
  })
}

/** The links of a Markdown text (not in code), each with its line: `[text](href)` and `![alt](src)`. */
export function linksOf(text) {
  const links = []
  proseLines(text).forEach((line, i) => {
    const outsideCode = line.replace(/(`+)[\s\S]*?\1/g, (span) => ' '.repeat(span.length))
    for (const match of outsideCode.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ href: match[1], line: i + 1, image: match[0].startsWith('!') })
    }
  })
  return links
}

/** A heading's text as GitHub and markdown-it see it: inline markup gone, code and link text kept. */
export function headingText(source) {
  const plain = (text) => text.replace(/<[^>]+>/g, '').replace(/\*\*|\*/g, '')
  const withoutLinks = source.replace(/!?\[((?:[^\]\\]|\\.)*)\]\([^)]*\)/g, '$1')
  let out = ''
  let last = 0
  for (const match of withoutLinks.matchAll(/(`+)([\s\S]*?)\1/g)) {
    out += plain(withoutLinks.slice(last, match.index)) + (match[2] ?? '').trim()
    last = (match.index ?? 0) + match[0].length
  }
  out += plain(withoutLinks.slice(last))
  return out.replace(/\\(.)/g, '$1').trim()
}

/** GitHub's anchor of a heading text, without the -1, -2 of repeated headings (the site's config names its headings with it). */
export function slugOf(text) {
  return slug(text)
}

/** Every anchor of a Markdown text: its headings' (repeated ones numbered as GitHub does) and explicit ids. */
export function anchorsOf(text) {
  const anchors = new Set()
  const seen = new Map()
  for (const line of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (heading) {
      const base = slugOf(headingText(heading[1] ?? ''))
      const count = seen.get(base) ?? 0
      seen.set(base, count + 1)
      anchors.add(count === 0 ? base : `${base}-${count}`)
    }
    for (const match of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1])
  }
  return anchors
}

/**
 * The repository files outside docs/ that the site shows as pages: each file a page links to, and,
 * for Markdown files among them, the files they link to in turn.
 */
export function sourceFiles(root = ROOT) {
  const found = new Set()
  const queue = [...sitePages(root)]
  while (queue.length > 0) {
    const file = queue.shift()
    for (const { href } of linksOf(readFileSync(join(root, file), 'utf8'))) {
      const target = resolveLink(file, href, root)
      if (target.kind !== 'source' || found.has(target.repoPath)) continue
      found.add(target.repoPath)
      if (target.repoPath.endsWith('.md')) queue.push(target.repoPath)
    }
  }
  return [...found].sort()
}

/**
 * Every link of every page, of the READMEs, and of every Markdown file the site shows under /source/, checked:
 * its file exists and is not a folder, and its anchor is a heading of the page it leads to.
 * Returns the problems, each `file:line: href: what is wrong`; none when every link holds. `read`
 * gives a file's text (a test hands it a broken copy of a page).
 */
export function checkLinks(root = ROOT, { read = (file) => readFileSync(join(root, file), 'utf8') } = {}) {
  const problems = []
  const anchorCache = new Map()
  const anchors = (repoPath) => {
    if (!anchorCache.has(repoPath)) anchorCache.set(repoPath, anchorsOf(read(repoPath)))
    return anchorCache.get(repoPath)
  }
  const files = [...new Set([...sitePages(root), ...readmes(root), ...sourceFiles(root).filter((file) => file.endsWith('.md'))])]
  for (const file of files) {
    for (const { href, line, image } of linksOf(read(file))) {
      const target = resolveLink(file, href, root)
      const at = `${file}:${line}: ${href}`
      if (target.problem) {
        problems.push(`${at}: ${target.problem}`)
        continue
      }
      if (image && target.kind !== 'asset' && target.kind !== 'external') problems.push(`${at}: an image that is not a file under docs/`)
      if (
        target.hash &&
        (target.kind === 'page' || target.kind === 'anchor' || (target.kind === 'source' && target.repoPath.endsWith('.md')))
      ) {
        if (!anchors(target.repoPath).has(target.hash)) problems.push(`${at}: no heading "#${target.hash}" in ${target.repoPath}`)
      } else if (target.hash && target.kind !== 'external') {
        problems.push(`${at}: an anchor into a file that has no headings`)
      }
    }
  }
  return problems
}

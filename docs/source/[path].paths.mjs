// The pages under /source/: one per file of the repository that a page of the site links to (an
// example it quotes, a test it names, bench/RESULTS.md), so that the site holds every file it links
// to, at the version it documents. A Markdown file is shown as a page; any other file as code.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, siteVersion, sourceFiles } from '../../scripts/docs-site.mjs'

/** Fence languages by file extension (anything else is shown as plain text). @type {Record<string, string>} */
const LANGUAGES = {
  js: 'js',
  mjs: 'js',
  cjs: 'js',
  ts: 'ts',
  mts: 'ts',
  json: 'json',
  yml: 'yaml',
  yaml: 'yaml',
  toml: 'toml',
  sql: 'sql',
  sh: 'sh',
}

/**
 * A fence longer than any run of backticks in the text, so the file cannot close it.
 * @param {string} text
 */
function fence(text) {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((run) => run[0].length))
  return '`'.repeat(longest + 1)
}

export default {
  paths() {
    const version = siteVersion()
    return sourceFiles().map((file) => {
      const text = readFileSync(join(ROOT, file), 'utf8')
      if (file.endsWith('.md')) return { params: { path: file.replace(/\.md$/, '') }, content: text }
      const language = LANGUAGES[file.slice(file.lastIndexOf('.') + 1)] ?? 'text'
      const marks = fence(text)
      const content = [
        `# ${file}`,
        '',
        `The file \`${file}\` of the repository, as of version ${version}.`,
        '',
        `${marks}${language}`,
        text.replace(/\n$/, ''),
        marks,
        '',
      ].join('\n')
      return { params: { path: file }, content }
    })
  },
}

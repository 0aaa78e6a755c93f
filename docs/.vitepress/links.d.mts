// Types of links.mjs for the TypeScript tests that import it.
import type MarkdownIt from 'markdown-it'
export declare function siteLinks(md: MarkdownIt): void

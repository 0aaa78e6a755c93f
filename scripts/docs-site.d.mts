// Types of scripts/docs-site.mjs for the TypeScript tests that import it.
export declare const ROOT: string
export declare const DOCS_DIR: string
export declare const SOURCE_DIR: string
export declare const SOURCE_ROUTE: string
export type LinkTarget =
  | { kind: 'external'; problem?: undefined; repoPath?: undefined; hash?: undefined; href?: undefined }
  | { kind: 'anchor' | 'page' | 'asset' | 'source'; repoPath: string; hash: string; href?: string; problem?: undefined }
  | { kind: 'missing' | 'directory' | 'outside'; repoPath: string; problem: string; hash?: undefined; href?: undefined }
export declare function siteVersion(root?: string): string
export declare function sitePages(root?: string): string[]
export declare function readmes(root?: string): string[]
export declare function pageRepoPath(relativePath: string, root?: string): string
export declare function sourcePagePath(repoPath: string): string
export declare function resolveLink(from: string, href: string, root?: string): LinkTarget
export declare function proseLines(text: string): string[]
export declare function linksOf(text: string): { href: string; line: number; image: boolean }[]
export declare function headingText(source: string): string
export declare function slugOf(text: string): string
export declare function anchorsOf(text: string): Set<string>
export declare function sourceFiles(root?: string): string[]
export declare function checkLinks(root?: string, options?: { read?: (file: string) => string }): string[]

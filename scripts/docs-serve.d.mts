// Types of scripts/docs-serve.mjs for the TypeScript tests that import it.
export declare const SITE_DIST: string
export declare function buildSite(options?: {
  outDir?: string
  env?: Record<string, string>
  quiet?: boolean
}): Promise<{ code: number; output: string }>
export declare function serveSite(
  dir?: string,
  options?: { port?: number; host?: string },
): Promise<{ url: string; close: () => Promise<void> }>

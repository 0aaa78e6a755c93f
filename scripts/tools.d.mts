// Types of scripts/tools.mjs for the TypeScript tests that import it.
export declare const TOOLS_DIR: string
export type ToolName = 'bun' | 'deno' | 'node22' | 'node24' | 'miniflare' | 'better-sqlite3-13' | 'node-gyp' | 'postgres15'
export interface Tool {
  name: ToolName
  /** The folder the tool was installed into (its node_modules holds the package). */
  dir: string
  /** The installed package's folder. */
  pkg: string
  /** The executable, for tools that have one. */
  bin?: string
  version: string
}
export declare const TOOLS: Record<ToolName, { spec: string; pkg: string; bin?: string }>
export declare function ensureTool(name: ToolName): Promise<Tool>

// Types of scripts/api-report.mjs for the TypeScript tests that import it.
export declare const UPDATE_COMMAND: string
export interface PublishedPackage {
  /** The package's folder. */
  dir: string
  /** The folder's name (the reports' base name). */
  name: string
  manifest: Record<string, unknown>
}
export interface EntryPoint {
  subpath: string
  dts: string
  report: string
}
export interface ReportDifference {
  kind: 'changed' | 'missing' | 'stale'
  /** The committed report, relative to the root. */
  file: string
  /** For `changed`: the lines only in the committed report (`- `) and only in the fresh one (`+ `). */
  diff?: string[]
}
export declare function publishedPackages(root?: string): PublishedPackage[]
export declare function entryPoints(pkgDir: string, manifest: Record<string, unknown>, name: string): EntryPoint[]
export declare function generateReports(pkg: PublishedPackage, outDir: string, root?: string): string[]
export declare function reportFolder(pkg: PublishedPackage): string
export declare function compareReports(pkg: PublishedPackage, freshDir: string, files: string[], root?: string): ReportDifference[]
export declare function checkReports(options?: { update?: boolean; root?: string; packages?: PublishedPackage[] }): ReportDifference[]
export declare function describeDifferences(differences: ReportDifference[]): string

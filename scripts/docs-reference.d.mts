// Types of scripts/docs-reference.mjs for the TypeScript tests that import it.
export declare const UPDATE_REFERENCE: string
export interface ReferencePage {
  /** The page, relative to the root. */
  file: string
  text: string
}
export interface ReferenceDifference {
  file: string
  /** The first line that differs (1-based). */
  line: number
  committed: string | undefined
  fresh: string | undefined
}
export declare function optionsPage(root?: string): string
export declare function errorsPage(root?: string): string
export declare function cliPage(root?: string): Promise<string>
export declare function generateReference(root?: string): Promise<ReferencePage[]>
export declare function checkReference(options?: {
  root?: string
  update?: boolean
  pages?: ReferencePage[]
}): Promise<ReferenceDifference[]>
export declare function describeReferenceDifferences(differences: ReferenceDifference[]): string

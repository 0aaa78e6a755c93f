import type { Metafile } from 'esbuild'

export declare const WORKER_CONDITIONS: string[]
export declare function buildWorker(entry: string, outfile: string): Promise<Metafile>

/**
 * email-webhooks: the command-line tool. The bin calls `run(process.argv)`; `createProgram`
 * exposes the commander program for embedding.
 */
export type { CommandFactory, RunState } from './lib/common.js'
export { EXIT, UsageError } from './lib/errors.js'
export { createProgram, run } from './program.js'

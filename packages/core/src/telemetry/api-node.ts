/**
 * Finding `@opentelemetry/api` on Node: required from where core is installed, once, when the
 * first receiver is built. Missing is normal (it is an optional peer dependency): then nothing
 * is loaded and telemetry costs nothing.
 */
import { createRequire } from 'node:module'

let loaded: { api: unknown } | undefined

/** The installed `@opentelemetry/api` module, or undefined. */
export function loadOtelApi(): unknown {
  if (loaded === undefined) {
    try {
      loaded = { api: createRequire(import.meta.url)('@opentelemetry/api') }
    } catch {
      loaded = { api: undefined }
    }
  }
  return loaded.api
}

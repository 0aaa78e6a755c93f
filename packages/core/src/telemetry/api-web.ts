/**
 * Finding `@opentelemetry/api` where modules cannot be required synchronously (Bun, Deno,
 * Workers, browsers): it is not looked up; pass it as `telemetry: { api }` to turn telemetry on.
 */

/** Always undefined here: see `telemetry: { api }`. */
export function loadOtelApi(): unknown {
  return undefined
}

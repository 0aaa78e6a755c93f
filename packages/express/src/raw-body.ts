/** Finding the raw request bytes in Express: a Buffer body, `req.rawBody`, or the unread stream (read under the limit by core's `readNodeBody`). */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { bodyTooLargeError, declaredLengthExceeds, readNodeBody } from '@email-webhooks/core'

type RawBodyRequest = IncomingMessage & { body?: unknown; rawBody?: unknown; _body?: unknown }

/** The message of a 500 `raw_body_unavailable`: the two fixes. */
export const RAW_BODY_GONE =
  '[@email-webhooks/express] the request body was already parsed (by express.json() or another body parser) and no raw bytes were kept, so the signature cannot be checked. Fix: mount the webhook route before express.json(), or keep the raw body with express.json({ verify: captureRawBody }) using captureRawBody from @email-webhooks/express.'

/**
 * Keeps the raw bytes when a JSON parser runs first: `app.use(express.json({ verify: captureRawBody }))`.
 * @param req The request; `req.rawBody` is set to the exact bytes received.
 * @param _res Unused.
 * @param buffer The raw body as body-parser read it.
 */
export function captureRawBody(req: IncomingMessage, _res: ServerResponse, buffer: Buffer): void {
  ;(req as RawBodyRequest).rawBody = buffer
}

/** The raw bytes, in DESIGN order: Buffer body, `req.rawBody`, the unread stream; undefined when a parser consumed them. */
export function rawBody(req: RawBodyRequest, maxBytes: number): Promise<Uint8Array | string> | undefined {
  if (req.body instanceof Uint8Array) return Promise.resolve(req.body)
  const kept = req.rawBody
  if (kept instanceof Uint8Array || typeof kept === 'string') return Promise.resolve(kept)
  if (req._body === true || req.readableEnded) return undefined
  if (declaredLengthExceeds(req.headers['content-length'], maxBytes)) return Promise.reject(bodyTooLargeError(maxBytes))
  return readNodeBody(req, maxBytes)
}

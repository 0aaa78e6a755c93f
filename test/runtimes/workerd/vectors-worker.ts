// The 16 HMAC vectors inside workerd: a GET answers with the crypto backend and what the
// public API made of each vector (neutral/vectors-check.ts).
import { cryptoBackendName } from '@email-webhooks/core'
import { vectorResults } from '../neutral/vectors-check.ts'

export default {
  async fetch(): Promise<Response> {
    return Response.json({ backend: cryptoBackendName(), vectors: await vectorResults() })
  },
}

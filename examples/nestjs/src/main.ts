// EMAIL_WEBHOOK_SECRET=... PLATFORM=express|fastify PORT=3000, run with the Nest CLI (nest start).
import { createApp } from './create-app'

const app = await createApp(process.env.PLATFORM === 'fastify' ? 'fastify' : 'express')
await app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1')
console.log(`listening on ${await app.getUrl()}/hooks`)

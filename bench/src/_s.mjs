import { runStoreBench } from './stores.js'

for (const r of await runStoreBench({ events: 3000, rounds: 3 })) console.log(r.store.padEnd(14), r.concurrency, Math.round(r.perSecond))

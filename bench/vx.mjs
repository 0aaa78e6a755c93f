import { createHmac, timingSafeEqual } from 'node:crypto'
import { verifyWebhook } from "@email-webhooks/core"
const SECRET='bench-secret-bench-secret-bench-secret'
const ID='2f7c0a8e-4b1d-4c3e-9f5a-6d8b7e9c0a1b'
const size=+process.argv[2]||300
const body=Buffer.from(JSON.stringify({type:'email.queued',created_at:new Date().toISOString(),data:{id:ID,pad:'x'.repeat(size-100)}}))
const ts=Math.floor(Date.now()/1000)
const headers={'webhook-id':ID,'webhook-timestamp':String(ts),'webhook-signature':createHmac('sha256',SECRET).update(`${ID}.${ts}.`).update(body).digest('hex')}
const key=Buffer.from(SECRET)
function hand(h,b){const e=Buffer.from(h['webhook-signature'],'hex');const m=createHmac('sha256',key).update(`${h['webhook-id']}.${h['webhook-timestamp']}.`).update(b).digest();if(e.length!==m.length||!timingSafeEqual(e,m))throw new Error('x')}
const bound=(h,b)=>verifyWebhook({headers:h,body:b,secret:SECRET})
const cases={
 handSync:()=>hand(headers,body),
 handAwait:async()=>{for(let i=0;i<N;i++) await Promise.resolve(hand(headers,body))},
 verifyWebhook:async()=>{for(let i=0;i<N;i++) await verifyWebhook({headers,body,secret:SECRET})},
 bound:async()=>{for(let i=0;i<N;i++) await bound(headers,body)},
}
const N=200000
async function run(name){const t=performance.now(); if(name==='handSync'){for(let i=0;i<N;i++)cases.handSync()} else await cases[name](); return (performance.now()-t)*1e3/N}
const res={}
for(let r=0;r<7;r++) for(const n of Object.keys(cases)){(res[n]??=[]).push(await run(n))}
for(const [n,v] of Object.entries(res)){v.sort((a,b)=>a-b);console.log(n.padEnd(15),v[3].toFixed(3),'µs')}

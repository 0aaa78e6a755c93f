import { readFileSync } from 'node:fs'
import type { Options } from 'tsup'

/** The package's version, built in: a store's schema stamp records which release wrote it (store/schema-version.ts). */
const { version } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { version: string }

const config: Options = {
  entry: {
    index: 'src/index.ts',
    sqlite: 'src/store/sqlite/index.ts',
    postgres: 'src/store/postgres/index.ts',
    redis: 'src/store/redis/index.ts',
    dynamodb: 'src/store/dynamodb/index.ts',
    'deno-kv': 'src/store/deno-kv/index.ts',
    testing: 'src/testing/index.ts',
    api: 'src/api/index.ts',
    console: 'src/console/index.ts',
    'crypto-node': 'src/crypto/node.ts',
    'crypto-web': 'src/crypto/web.ts',
    'default-store-node': 'src/store/default-store-node.ts',
    'default-store-web': 'src/store/default-store-web.ts',
    'telemetry-api-node': 'src/telemetry/api-node.ts',
    'telemetry-api-web': 'src/telemetry/api-web.ts',
  },
  format: ['esm', 'cjs'],
  dts: {
    entry: {
      index: 'src/index.ts',
      sqlite: 'src/store/sqlite/index.ts',
      postgres: 'src/store/postgres/index.ts',
      redis: 'src/store/redis/index.ts',
      dynamodb: 'src/store/dynamodb/index.ts',
      'deno-kv': 'src/store/deno-kv/index.ts',
      testing: 'src/testing/index.ts',
      api: 'src/api/index.ts',
      console: 'src/console/index.ts',
    },
  },
  define: { __EMAIL_WEBHOOKS_CORE_VERSION__: JSON.stringify(version) },
  target: 'node20',
  platform: 'neutral',
  splitting: false,
  shims: true,
  removeNodeProtocol: false,
  clean: false,
  sourcemap: false,
  external: [
    '#crypto',
    '#default-store',
    '#telemetry-api',
    '@email-webhooks/core',
    '@email-webhooks/core/sqlite',
    'better-sqlite3',
    'pg',
    'ioredis',
    '@aws-sdk/client-dynamodb',
    /^node:/,
  ],
}

export default config

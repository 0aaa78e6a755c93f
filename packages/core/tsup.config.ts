import type { Options } from 'tsup'

const config: Options = {
  entry: {
    index: 'src/index.ts',
    sqlite: 'src/store/sqlite/index.ts',
    postgres: 'src/store/postgres/index.ts',
    redis: 'src/store/redis/index.ts',
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
      testing: 'src/testing/index.ts',
      api: 'src/api/index.ts',
      console: 'src/console/index.ts',
    },
  },
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
    /^node:/,
  ],
}

export default config

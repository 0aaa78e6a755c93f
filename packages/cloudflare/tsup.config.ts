import type { Options } from 'tsup'
import manifest from './package.json' with { type: 'json' }

/** The package's version, built in: the stores' schema stamp records which release wrote it (src/schema.ts). */
const { version } = manifest

const config: Options = {
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  define: { __EMAIL_WEBHOOKS_CLOUDFLARE_VERSION__: JSON.stringify(version) },
  target: 'es2022',
  platform: 'neutral',
  splitting: false,
  clean: false,
  removeNodeProtocol: false,
  external: [/^@email-webhooks\//],
}

export default config

// The site's navigation: every page of docs/ in one sidebar, in reading order. Plain data (the
// repository path of each page), so that the tests can check that every page is in it exactly once.

/** The groups of the sidebar: a title and its pages (repository paths), in order. */
export function sidebarGroups() {
  return [
    {
      text: 'Getting started',
      items: [
        ['Install', 'docs/getting-started/index.md'],
        ['Express', 'docs/getting-started/express.md'],
        ['Hono', 'docs/getting-started/hono.md'],
        ['Fastify', 'docs/getting-started/fastify.md'],
        ['Koa', 'docs/getting-started/koa.md'],
        ['AWS Lambda', 'docs/getting-started/lambda.md'],
        ['Cloudflare Workers', 'docs/getting-started/cloudflare-workers.md'],
        ['Any Request → Response runtime', 'docs/getting-started/web-standard.md'],
        ['Next.js', 'docs/getting-started/nextjs.md'],
        ['NestJS', 'docs/getting-started/nestjs.md'],
        ['SvelteKit', 'docs/getting-started/sveltekit.md'],
        ['Nuxt', 'docs/getting-started/nuxt.md'],
        ['Astro', 'docs/getting-started/astro.md'],
        ['Elysia on Bun', 'docs/getting-started/elysia.md'],
        ['Bun', 'docs/getting-started/bun.md'],
        ['Deno', 'docs/getting-started/deno.md'],
        ['All frameworks and runtimes', 'docs/runtimes.md'],
      ],
    },
    {
      text: 'Concepts',
      items: [
        ["The sender's contract", 'docs/concepts/senders-contract.md'],
        ['Verification', 'docs/concepts/verification.md'],
        ['Dedup, leases and deadlines', 'docs/concepts/dedup-and-leases.md'],
        ['Ordering', 'docs/concepts/ordering.md'],
        ['Inbox mode', 'docs/concepts/inbox-mode.md'],
        ['Recovery and reconcile', 'docs/concepts/recovery.md'],
        ['How it works', 'docs/design.md'],
      ],
    },
    {
      text: 'Guides',
      items: [
        ['Testing your handlers', 'docs/guides/testing-handlers.md'],
        ['The command line', 'docs/guides/cli.md'],
        ['Stores', 'docs/guides/stores.md'],
        ['Many instances', 'docs/guides/many-instances.md'],
        ['Serverless stores', 'docs/guides/serverless-stores.md'],
        ['A store of your own', 'docs/guides/custom-store.md'],
        ['Observability', 'docs/guides/observability.md'],
        ["The operator's console", 'docs/console.md'],
        ['Handing events to your queue', 'docs/queues.md'],
        ['BullMQ', 'docs/guides/bullmq.md'],
        ['pg-boss', 'docs/guides/pg-boss.md'],
        ['Faults and second runs', 'docs/guides/faults.md'],
      ],
    },
    {
      text: 'Reference',
      items: [
        ['Overview', 'docs/reference/index.md'],
        ['Options', 'docs/reference/options.md'],
        ['Answers and error codes', 'docs/reference/errors.md'],
        ['Command line', 'docs/reference/cli.md'],
        ['Packages and entry points', 'docs/reference/packages.md'],
        ['Where the README sections went', 'docs/moved.md'],
      ],
    },
    {
      text: 'Performance and reliability',
      items: [
        ['Performance', 'docs/performance.md'],
        ['Reliability', 'docs/reliability.md'],
      ],
    },
    {
      text: 'Contributing',
      items: [
        ['Working on email-webhooks', 'docs/contributing.md'],
        ['Testing', 'docs/testing.md'],
        ['Releasing', 'docs/releasing.md'],
      ],
    },
  ]
}

/** A page's link in the site: `docs/guides/cli.md` → `/guides/cli`, `docs/reference/index.md` → `/reference/`. */
export function siteLink(page) {
  return `/${page
    .replace(/^docs\//, '')
    .replace(/(^|\/)index\.md$/, '$1')
    .replace(/\.md$/, '')}`
}

/** The sidebar in VitePress's shape. */
export function sidebar() {
  return sidebarGroups().map((group) => ({
    text: group.text,
    collapsed: false,
    items: group.items.map(([text, page]) => ({ text, link: siteLink(page) })),
  }))
}

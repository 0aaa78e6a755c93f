#!/usr/bin/env node
// The `email-webhooks` command: runs the CLI built in dist/ with this process's arguments.
import { run } from '../dist/index.js'

process.exitCode = await run(process.argv)

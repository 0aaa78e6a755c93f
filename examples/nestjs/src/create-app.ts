// The app on either platform, with the raw body kept: main.ts for a real start, tests for both.
import 'reflect-metadata'
import type { INestApplication } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import { AppModule } from './app.module'

export function createApp(platform: 'express' | 'fastify'): Promise<INestApplication> {
  const adapter = platform === 'fastify' ? new FastifyAdapter() : new ExpressAdapter()
  return NestFactory.create(AppModule, adapter, { rawBody: true, logger: ['error', 'warn'] })
}

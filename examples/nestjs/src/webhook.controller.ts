// A NestJS controller that receives the email service's webhooks on POST /hooks, on the Express and
// on the Fastify platform. The app is created with { rawBody: true }, so Nest keeps the exact bytes
// of the JSON body in req.rawBody on both; core's receiver (what every adapter uses) checks them,
// and the platform's own adapter writes the answer.
import type { IncomingHttpHeaders } from 'node:http'
import { createReceiver, type Receiver, WebhookHandlingError } from '@email-webhooks/core'
import { Controller, Inject, Post, type RawBodyRequest, Req, Res } from '@nestjs/common'
import { HttpAdapterHost } from '@nestjs/core'
import { EmailsService } from './emails.service'

const NO_RAW_BODY = 'No raw body was kept: create the app with NestFactory.create(AppModule, adapter, { rawBody: true }).'

@Controller('hooks')
export class WebhookController {
  readonly #receiver: Receiver

  constructor(
    @Inject(EmailsService) emails: EmailsService,
    @Inject(HttpAdapterHost) private readonly host: HttpAdapterHost,
  ) {
    this.#receiver = createReceiver({
      secret: process.env.EMAIL_WEBHOOK_SECRET ?? '',
      handlers: { 'email.bounced': (event) => emails.markBounced(event.data.id) },
    })
  }

  @Post()
  async receive(@Req() req: RawBodyRequest<{ headers: IncomingHttpHeaders }>, @Res() res: unknown): Promise<void> {
    const answer = req.rawBody
      ? await this.#receiver.receive({ headers: req.headers, body: req.rawBody })
      : this.#receiver.refuse(new WebhookHandlingError('raw_body_unavailable', NO_RAW_BODY))
    const { httpAdapter } = this.host
    for (const [name, value] of Object.entries(answer.headers)) httpAdapter.setHeader(res, name, value)
    httpAdapter.reply(res, answer.body, answer.status)
  }
}

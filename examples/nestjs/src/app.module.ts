import { Body, Controller, Module, Post } from '@nestjs/common'
import { EmailsService } from './emails.service'
import { WebhookController } from './webhook.controller'

/** The app's own JSON API, beside the webhook route: Nest parses its body as usual. */
@Controller('api/notes')
export class NotesController {
  @Post()
  save(@Body() note: unknown): { saved: unknown } {
    return { saved: note }
  }
}

@Module({ controllers: [WebhookController, NotesController], providers: [EmailsService] })
export class AppModule {}

// Stands for the app's own service that writes to its database.
import { Injectable } from '@nestjs/common'

@Injectable()
export class EmailsService {
  readonly bounced: string[] = []

  async markBounced(emailId: string): Promise<void> {
    this.bounced.push(emailId)
  }
}

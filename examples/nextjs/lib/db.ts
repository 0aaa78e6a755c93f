// Stands for the app's own database code.
export const bounced: string[] = []

export async function markBounced(emailId: string): Promise<void> {
  bounced.push(emailId)
}

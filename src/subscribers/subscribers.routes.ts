import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'

export function registerSubscribersRoutes(app: App, ctx: AppContext): void {
  void app
  void ctx
}

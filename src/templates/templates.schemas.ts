// Request and response shapes of /v1/templates (issue 24): a saved
// notification whose fields may hold variables, the default value of each
// variable, and versions by language (docs/templates.md).
import { Type, type Static } from 'typebox'
import { Localized, NotificationInput, VariableDefaults } from '../broadcasts/broadcasts.schemas.ts'

const Name = Type.String({ minLength: 1, maxLength: 100, description: 'Unique in the project.' })

export const CreateTemplateBody = Type.Object(
  {
    name: Name,
    notification: NotificationInput,
    defaults: Type.Optional(VariableDefaults),
    localized: Type.Optional(Localized),
  },
  { additionalProperties: false },
)
export type CreateTemplateBody = Static<typeof CreateTemplateBody>

export const UpdateTemplateBody = Type.Object(
  {
    name: Type.Optional(Name),
    notification: Type.Optional(NotificationInput),
    defaults: Type.Optional(VariableDefaults),
    localized: Type.Optional(Localized),
  },
  { additionalProperties: false, description: 'Each field given replaces the stored one whole; fields left out stay.' },
)
export type UpdateTemplateBody = Static<typeof UpdateTemplateBody>

export const TemplateView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  notification: NotificationInput,
  defaults: VariableDefaults,
  localized: Localized,
  variables: Type.Array(Type.String(), { description: 'Every variable the template reads, in any language ("tags.first_name", "data.order_id").' }),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
})
export type TemplateView = Static<typeof TemplateView>

export const TemplateList = Type.Object({ templates: Type.Array(TemplateView) })
export const TemplateParams = Type.Object({ id: Type.String({ maxLength: 64 }) })

import { Type } from 'typebox'

export const MediaFileParams = Type.Object({
  file: Type.String({ description: '`<sha256>.<ext>` as returned in a hosted icon or image URL, e.g. `9f86….png`' }),
})


/** The file itself; its Content-Type is image/png, image/jpeg or image/webp. */
export const MediaFileResponse = Type.Unsafe<Buffer>({ type: 'string', format: 'binary', description: 'The image bytes.' })

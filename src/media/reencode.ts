// Decodes a checked image and encodes it again in the same format. Whatever
// the sender put around the pixels (EXIF, ICC, text chunks, a script appended
// after the image data: polyglots) does not survive, and bytes the decoder
// refuses (truncated, corrupt) are refused here.
import { MAX_PIXELS, MediaCheckError, type CheckedImage, type ImageFormat } from './image-check.ts'

export interface EncodedImage {
  format: ImageFormat
  width: number
  height: number
  bytes: Buffer
}

/** Quality for lossy re-encoding: high enough that a second generation is not visibly worse. */
const LOSSY_QUALITY = 90

export async function reencode(image: CheckedImage): Promise<EncodedImage> {
  // Loaded on first use (~19 MB resident with libvips): a worker, or an API
  // that never receives an image, does not carry it.
  const { default: sharp } = await import('sharp')
  try {
    const input = sharp(image.bytes, {
      // Second line of defence after readDimensions: sharp refuses to decode
      // past this many pixels even if the header we read lied.
      limitInputPixels: MAX_PIXELS,
      // Abort on any decoder warning (truncated data and the like): untrusted input.
      failOn: 'warning',
      // Only the first frame of an animated PNG or WebP; notifications show one.
      pages: 1,
      // The EXIF orientation is applied to the pixels, since the tag is stripped.
      autoOrient: true,
    })
    const metadata = await input.metadata()
    if (metadata.format !== image.format) throw new MediaCheckError('The image could not be decoded.')
    // sharp keeps no metadata unless asked (withMetadata/keepMetadata), so the output is pixels only.
    const encoder =
      image.format === 'png'
        ? input.png({ compressionLevel: 9 })
        : image.format === 'jpeg'
          ? input.jpeg({ quality: LOSSY_QUALITY })
          : input.webp({ quality: LOSSY_QUALITY })
    const { data, info } = await encoder.toBuffer({ resolveWithObject: true })
    return { format: image.format, width: info.width, height: info.height, bytes: data }
  } catch (err) {
    if (err instanceof MediaCheckError) throw err
    throw new MediaCheckError('The image could not be decoded.')
  }
}

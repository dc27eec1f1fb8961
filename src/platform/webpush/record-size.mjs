// The size arithmetic of one web push record (RFC 8291 over RFC 8188's
// aes128gcm with exactly one record). Two domains need it: broadcasts, to know
// whether a notification fits in one push (and to tell a dry run the push's
// size), and delivery, which encrypts. Plain JavaScript (types in
// record-size.d.mts) because delivery's encryption threads load it without a
// TypeScript loader.

/** Record size written in the header; push services must accept 4096 bytes of body (RFC 8030 §7.2). */
export const RECORD_SIZE = 4096
export const SALT_LENGTH = 16
export const PUBLIC_KEY_LENGTH = 65 // uncompressed P-256 point: 0x04 | x | y
export const TAG_LENGTH = 16
/** salt(16) | rs(4) | idlen(1) | keyid = sender public key(65) */
export const HEADER_LENGTH = SALT_LENGTH + 4 + 1 + PUBLIC_KEY_LENGTH
/** Largest plaintext whose single record fits the 4096-byte body: 4096 - 86 header - 1 delimiter - 16 tag. */
export const MAX_PLAINTEXT_BYTES = RECORD_SIZE - HEADER_LENGTH - 1 - TAG_LENGTH

/**
 * The length of the HTTP body an encryption of `plaintextLength` bytes gives:
 * header, plaintext (no padding is added), the delimiter and the tag. For dry
 * runs, which report a push's size without encrypting one.
 */
export function encryptedLength(plaintextLength) {
  return HEADER_LENGTH + plaintextLength + 1 + TAG_LENGTH
}

// Types of record-size.mjs (plain JavaScript so encryption threads load it without tsx).

/** Record size written in the header; push services must accept 4096 bytes of body (RFC 8030 §7.2). */
export declare const RECORD_SIZE: number
export declare const SALT_LENGTH: number
export declare const PUBLIC_KEY_LENGTH: number
export declare const TAG_LENGTH: number
/** salt(16) | rs(4) | idlen(1) | keyid = sender public key(65) */
export declare const HEADER_LENGTH: number
/** Largest plaintext whose single record fits the 4096-byte body: 4096 - 86 header - 1 delimiter - 16 tag. */
export declare const MAX_PLAINTEXT_BYTES: number
/** The length of the body an encryption of this many plaintext bytes gives: header + plaintext + delimiter + tag. */
export declare function encryptedLength(plaintextLength: number): number

// Types of rfc8291.mjs (plain JavaScript so encryption threads load it without tsx).

/** Record size written in the header; push services must accept 4096 bytes of body (RFC 8030 §7.2). */
export declare const RECORD_SIZE: number
/** salt(16) | rs(4) | idlen(1) | keyid = sender public key(65) */
export declare const HEADER_LENGTH: number
/** Largest plaintext whose single record fits the 4096-byte body: 4096 - 86 header - 1 delimiter - 16 tag. */
export declare const MAX_PLAINTEXT_BYTES: number

/** The length of the body encryptPayload returns for a plaintext of this many bytes: header + plaintext + delimiter + tag. */
export declare function encryptedLength(plaintextLength: number): number

export type PushEncryptionErrorReason = 'invalid_subscription_keys' | 'payload_too_large'

/**
 * Why a push could not be encrypted. `invalid_subscription_keys` means the
 * subscription itself is unusable (no retry will help);
 * `payload_too_large` means the caller should send a smaller payload.
 */
export declare class PushEncryptionError extends Error {
  readonly reason: PushEncryptionErrorReason
  constructor(reason: PushEncryptionErrorReason, message: string)
}

/** The keys of a PushSubscription as the browser gives them (base64url). */
export interface SubscriptionKeys {
  p256dh: string
  auth: string
}

/** Decoded subscription keys; build once per subscriber with prepareSubscriptionKeys. */
export interface PreparedSubscriptionKeys {
  readonly uaPublic: Buffer
  readonly authSecret: Buffer
}

export interface EncryptOptions {
  /** 16 bytes; default random. Only tests set it (RFC 8291 Appendix A). */
  salt?: Buffer
  /** Sender (application server) ECDH key pair, raw: 65-byte point and 32-byte scalar.
   *  Default a fresh pair per message, as RFC 8291 §3.1 requires. Only tests set it. */
  senderKeys?: { publicKey: Buffer; privateKey: Buffer }
}

/** Decodes and checks a subscription's keys. Throws PushEncryptionError('invalid_subscription_keys'). */
export declare function prepareSubscriptionKeys(keys: SubscriptionKeys): PreparedSubscriptionKeys

/**
 * Encrypts one push message body (RFC 8291, aes128gcm, one record of rs 4096).
 * Returns the whole HTTP body: header (salt | rs | idlen | sender public key)
 * followed by the record. Throws PushEncryptionError when the plaintext is over
 * MAX_PLAINTEXT_BYTES or the subscription keys are unusable.
 */
export declare function encryptPayload(
  plaintext: Buffer | Uint8Array,
  subscription: SubscriptionKeys | PreparedSubscriptionKeys,
  options?: EncryptOptions,
): Buffer

/**
 * encryptPayload through the OpenSSL addon (native/rfc8291.c): the same checks,
 * errors and bytes for less CPU. Null where the addon was not built or does not load.
 */
export declare function nativeEncryptPayload(): typeof encryptPayload | null

/** The encryption a thread uses, chosen once: the addon when `native` is true and it loads, node:crypto otherwise. */
export declare function chooseEncryptPayload(native: boolean): typeof encryptPayload

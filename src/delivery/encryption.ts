// RFC 8291 message encryption for web push (aes128gcm, one record). The
// implementation is rfc8291.mjs, plain JavaScript with its types beside it in
// rfc8291.d.mts, so that the encryption threads (encrypt-worker.mjs) load it
// without a TypeScript loader; the rest of Herald imports it from here.
export {
  chooseEncryptPayload,
  encryptPayload,
  encryptedLength,
  HEADER_LENGTH,
  MAX_PLAINTEXT_BYTES,
  nativeEncryptPayload,
  prepareSubscriptionKeys,
  PushEncryptionError,
  RECORD_SIZE,
  type EncryptOptions,
  type PreparedSubscriptionKeys,
  type PushEncryptionErrorReason,
  type SubscriptionKeys,
} from './rfc8291.mjs'

// RFC 8291 encryption (aes128gcm, one record) in one call into OpenSSL, the
// same steps as ../rfc8291.mjs: fresh P-256 key pair, ECDH, the five HMACs of
// §3.4, AES-128-GCM. Node's ECDH.computeSecret re-checks the key pair on every
// call, which is most of why this is faster (docs/performance.md). N-API only,
// so one build serves every Node version.
//
// The key pair and the ECDH go through OpenSSL's EC_KEY functions, not EVP_PKEY:
// OpenSSL 3 builds every EVP_PKEY through its provider layer (a name lookup,
// parameters, allocations), which measured ~37% of this addon's time per push.
// EC_KEY is deprecated in OpenSSL 3 but still part of libcrypto 3.x; a Node
// whose OpenSSL lacks it fails to load this addon and Herald uses node:crypto.
//
// encrypt(plaintext, uaPublic, authSecret[, salt, senderPrivate, senderPublic])
//   -> Buffer (the whole body), or undefined when uaPublic is not a P-256 point.
// The caller (rfc8291.mjs) has checked the lengths; salt and sender keys are
// for tests only (RFC 8291 Appendix A).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <node_api.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdh.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/rand.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PUBLIC_KEY_LENGTH 65
#define AUTH_LENGTH 16
#define SALT_LENGTH 16
#define HEADER_LENGTH 86
#define TAG_LENGTH 16
#define RECORD_SIZE 4096
#define MAX_PLAINTEXT 3993

// Per thread (each worker thread is its own napi_env): contexts set up once,
// since fetching algorithms per call is a measurable part of OpenSSL 3's cost.
typedef struct {
  EC_KEY *ephemeral;  // a fresh key pair generated into it for every push
  EC_POINT *peer;     // the user agent's public key, read into it for every push
  BN_CTX *bn;
  EVP_MD *sha256;
  EVP_MD_CTX *md;
  EVP_CIPHER *aes;
  EVP_CIPHER_CTX *cipher;
} State;

static void free_state(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  State *s = data;
  EC_POINT_free(s->peer);
  EC_KEY_free(s->ephemeral);
  BN_CTX_free(s->bn);
  EVP_MD_CTX_free(s->md);
  EVP_MD_free(s->sha256);
  EVP_CIPHER_CTX_free(s->cipher);
  EVP_CIPHER_free(s->aes);
  free(s);
}

static State *new_state(void) {
  State *s = calloc(1, sizeof(State));
  if (!s) return NULL;
  s->ephemeral = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
  s->peer = s->ephemeral ? EC_POINT_new(EC_KEY_get0_group(s->ephemeral)) : NULL;
  s->bn = BN_CTX_new();
  s->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
  s->md = EVP_MD_CTX_new();
  s->aes = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
  s->cipher = EVP_CIPHER_CTX_new();
  if (s->ephemeral && s->peer && s->bn && s->sha256 && s->md && s->aes && s->cipher &&
      EVP_EncryptInit_ex2(s->cipher, s->aes, NULL, NULL, NULL) > 0)
    return s;
  free_state(NULL, s, NULL);
  return NULL;
}

typedef struct {
  const uint8_t *data;
  size_t length;
} Part;

// HMAC-SHA256 over the concatenated parts, written out with a reused digest
// context: every key here is at most 32 bytes, so no key hashing is needed.
static int hmac(State *s, const uint8_t *key, size_t key_length, const Part *parts, int count, uint8_t out[32]) {
  uint8_t pad[64], inner[32];
  memset(pad, 0x36, sizeof pad);
  for (size_t i = 0; i < key_length; i++) pad[i] ^= key[i];
  if (EVP_DigestInit_ex2(s->md, s->sha256, NULL) <= 0 || EVP_DigestUpdate(s->md, pad, sizeof pad) <= 0) return 0;
  for (int i = 0; i < count; i++)
    if (EVP_DigestUpdate(s->md, parts[i].data, parts[i].length) <= 0) return 0;
  if (EVP_DigestFinal_ex(s->md, inner, NULL) <= 0) return 0;
  for (size_t i = 0; i < sizeof pad; i++) pad[i] ^= 0x36 ^ 0x5c;
  return EVP_DigestInit_ex2(s->md, s->sha256, NULL) > 0 && EVP_DigestUpdate(s->md, pad, sizeof pad) > 0 &&
         EVP_DigestUpdate(s->md, inner, sizeof inner) > 0 && EVP_DigestFinal_ex(s->md, out, NULL) > 0;
}

static const uint8_t KEY_INFO[] = "WebPush: info";                 // + its NUL: 14 bytes
static const uint8_t CEK_INFO[] = "Content-Encoding: aes128gcm\0\1"; // 29 bytes
static const uint8_t NONCE_INFO[] = "Content-Encoding: nonce\0\1";   // 25 bytes
static const uint8_t ONE = 1, DELIMITER = 2;

// Writes the whole body into `body` (HEADER_LENGTH + length + 1 + TAG_LENGTH bytes).
// Returns 1, 0 on an OpenSSL failure, -1 when the user agent's key is not a point.
static int encrypt(State *s, const uint8_t *plaintext, size_t length, const uint8_t *ua_public, const uint8_t *auth,
                   const uint8_t *salt, const uint8_t *sender_private, const uint8_t *sender_public, uint8_t *body) {
  int result = 0;
  const EC_GROUP *group = EC_KEY_get0_group(s->ephemeral);
  EC_KEY *fixed = NULL, *sender = s->ephemeral;
  BIGNUM *scalar = NULL;
  uint8_t secret[32], prk_key[32], ikm[32], prk[32], cek[32], nonce[32];
  int n = 0;

  // OpenSSL refuses a point that is not on the curve here (P-256's cofactor
  // is 1, so that is the whole check the peer key needs).
  if (!EC_POINT_oct2point(group, s->peer, ua_public, PUBLIC_KEY_LENGTH, s->bn)) {
    ERR_clear_error();
    return -1;
  }
  uint8_t *as_public = body + SALT_LENGTH + 5;
  if (sender_private) {
    // A fixed sender key pair (tests only).
    if (!(fixed = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1)) || !(scalar = BN_bin2bn(sender_private, 32, NULL)) ||
        !EC_KEY_set_private_key(fixed, scalar) || !EC_KEY_oct2key(fixed, sender_public, PUBLIC_KEY_LENGTH, s->bn))
      goto done;
    sender = fixed;
    memcpy(as_public, sender_public, PUBLIC_KEY_LENGTH);
  } else if (!EC_KEY_generate_key(s->ephemeral) ||
             EC_POINT_point2oct(group, EC_KEY_get0_public_key(s->ephemeral), POINT_CONVERSION_UNCOMPRESSED, as_public,
                                PUBLIC_KEY_LENGTH, s->bn) != PUBLIC_KEY_LENGTH)
    goto done;
  // The x coordinate of the shared point, with no second check of either key.
  if (ECDH_compute_key(secret, sizeof secret, s->peer, sender, NULL) != (int)sizeof secret) goto done;

  if (salt) memcpy(body, salt, SALT_LENGTH);
  else if (RAND_bytes(body, SALT_LENGTH) <= 0) goto done;
  body[16] = RECORD_SIZE >> 24, body[17] = (RECORD_SIZE >> 16) & 0xff, body[18] = (RECORD_SIZE >> 8) & 0xff,
  body[19] = RECORD_SIZE & 0xff, body[20] = PUBLIC_KEY_LENGTH;

  const Part ecdh[] = {{secret, sizeof secret}};
  const Part info[] = {{KEY_INFO, sizeof KEY_INFO}, {ua_public, PUBLIC_KEY_LENGTH}, {as_public, PUBLIC_KEY_LENGTH}, {&ONE, 1}};
  const Part key_material[] = {{ikm, sizeof ikm}};
  const Part cek_info[] = {{CEK_INFO, sizeof CEK_INFO - 1}};
  const Part nonce_info[] = {{NONCE_INFO, sizeof NONCE_INFO - 1}};
  if (!hmac(s, auth, AUTH_LENGTH, ecdh, 1, prk_key) || !hmac(s, prk_key, 32, info, 4, ikm) ||
      !hmac(s, body, SALT_LENGTH, key_material, 1, prk) || !hmac(s, prk, 32, cek_info, 1, cek) ||
      !hmac(s, prk, 32, nonce_info, 1, nonce))
    goto done;

  // The context keeps AES-128-GCM from start-up; only key and nonce change.
  uint8_t *out = body + HEADER_LENGTH;
  if (EVP_EncryptInit_ex2(s->cipher, NULL, cek, nonce, NULL) <= 0 ||
      (length > 0 && (EVP_EncryptUpdate(s->cipher, out, &n, plaintext, (int)length) <= 0 || (size_t)n != length)) ||
      EVP_EncryptUpdate(s->cipher, out + length, &n, &DELIMITER, 1) <= 0 || n != 1 ||
      EVP_EncryptFinal_ex(s->cipher, out + length + 1, &n) <= 0 ||
      EVP_CIPHER_CTX_ctrl(s->cipher, EVP_CTRL_GCM_GET_TAG, TAG_LENGTH, out + length + 1) <= 0)
    goto done;
  result = 1;
done:
  EC_KEY_free(fixed);
  BN_clear_free(scalar);
  OPENSSL_cleanse(secret, sizeof secret);
  if (!result) ERR_clear_error();
  return result;
}

// A Buffer argument of exactly `length` bytes (any length when length is 0), or NULL when absent.
static int buffer_arg(napi_env env, napi_value value, size_t length, const uint8_t **data, size_t *actual) {
  napi_valuetype type;
  bool is_buffer = false;
  *data = NULL;
  if (napi_typeof(env, value, &type) != napi_ok) return 0;
  if (type == napi_undefined || type == napi_null) return 1;
  void *bytes = NULL;
  if (napi_is_buffer(env, value, &is_buffer) != napi_ok || !is_buffer ||
      napi_get_buffer_info(env, value, &bytes, actual) != napi_ok || (length && *actual != length))
    return 0;
  *data = bytes ? bytes : (const uint8_t *)"";
  return 1;
}

static napi_value encrypt_js(napi_env env, napi_callback_info info) {
  size_t argc = 6, length = 0, ignored = 0;
  napi_value argv[6], result;
  const uint8_t *plaintext, *ua_public, *auth, *salt, *sender_private, *sender_public;
  State *s = NULL;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  for (size_t i = argc; i < 6; i++) napi_get_undefined(env, &argv[i]);
  if (!buffer_arg(env, argv[0], 0, &plaintext, &length) || !plaintext || length > MAX_PLAINTEXT ||
      !buffer_arg(env, argv[1], PUBLIC_KEY_LENGTH, &ua_public, &ignored) || !ua_public ||
      !buffer_arg(env, argv[2], AUTH_LENGTH, &auth, &ignored) || !auth ||
      !buffer_arg(env, argv[3], SALT_LENGTH, &salt, &ignored) ||
      !buffer_arg(env, argv[4], 32, &sender_private, &ignored) ||
      !buffer_arg(env, argv[5], PUBLIC_KEY_LENGTH, &sender_public, &ignored) || (!sender_private != !sender_public)) {
    napi_throw_type_error(env, NULL, "encrypt(plaintext, uaPublic[65], auth[16], salt?[16], senderPrivate?[32], senderPublic?[65])");
    return NULL;
  }
  if (napi_get_instance_data(env, (void **)&s) != napi_ok || !s) return NULL;
  uint8_t *body;
  if (napi_create_buffer(env, HEADER_LENGTH + length + 1 + TAG_LENGTH, (void **)&body, &result) != napi_ok) return NULL;
  int status = encrypt(s, plaintext, length, ua_public, auth, salt, sender_private, sender_public, body);
  if (status < 0) {
    napi_get_undefined(env, &result);
    return result;
  }
  if (status == 0) {
    napi_throw_error(env, NULL, "OpenSSL failed to encrypt the push message");
    return NULL;
  }
  return result;
}

NAPI_MODULE_INIT() {
  State *s = new_state();
  napi_value fn;
  if (!s) {
    napi_throw_error(env, NULL, "OpenSSL has no P-256, SHA-256 or AES-128-GCM");
    return NULL;
  }
  if (napi_set_instance_data(env, s, free_state, NULL) != napi_ok ||
      napi_create_function(env, "encrypt", NAPI_AUTO_LENGTH, encrypt_js, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "encrypt", fn) != napi_ok)
    return NULL;
  return exports;
}

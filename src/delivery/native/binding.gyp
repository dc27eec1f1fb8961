{
  # RFC 8291 encryption in one call into OpenSSL (see rfc8291.c). Built by
  # scripts/build-native.mjs on `npm install`; optional: Herald falls back to
  # node:crypto when this does not build or load.
  "targets": [
    {
      "target_name": "rfc8291",
      "sources": ["rfc8291.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"],
      # No -lcrypto: the OpenSSL symbols resolve against the one Node itself
      # uses (exported by a Node with bundled OpenSSL, or the libcrypto a
      # shared-OpenSSL Node links), so the addon and node:crypto never run two
      # copies. -z now binds them at load, so a Node without them fails the
      # require (and Herald falls back) instead of aborting at the first call.
      "ldflags": ["-Wl,-z,now"],
      "defines": ["NAPI_VERSION=8", "OPENSSL_API_COMPAT=30000"]
    }
  ]
}

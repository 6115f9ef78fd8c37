// GPGME (libgpgme-dev): OpenPGP decryption for import jobs and encryption for export jobs
// (issue 60), driven by CloakCrypto's OpenPGPDecryption and OpenPGPEncryption, each the one
// Swift owner of its GPGME context.
#ifndef CLOAK_CGPGME_SHIM_H
#define CLOAK_CGPGME_SHIM_H
#include <gpgme.h>

// Whether the decrypted message had no integrity protection (no MDC, no AEAD): the field is a
// bit-field, read here so the Swift side depends on no layout.
static inline int cloak_gpgme_result_has_no_mdc(gpgme_decrypt_result_t result) {
    return result != NULL && result->legacy_cipher_nomdc;
}

// Whether a listed key may be encrypted to now: it has an encryption-capable (sub)key and is
// neither revoked, expired, disabled nor invalid (bit-fields, read here for the same reason).
static inline int cloak_gpgme_key_can_encrypt(gpgme_key_t key) {
    return key != NULL && key->can_encrypt && !key->revoked && !key->expired && !key->disabled && !key->invalid;
}
#endif

// GPGME (libgpgme-dev): OpenPGP decryption for import jobs (issue 60), driven by
// CloakCrypto's OpenPGPDecryption, the one Swift owner of a GPGME context.
#ifndef CLOAK_CGPGME_SHIM_H
#define CLOAK_CGPGME_SHIM_H
#include <gpgme.h>

// Whether the decrypted message had no integrity protection (no MDC, no AEAD): the field is a
// bit-field, read here so the Swift side depends on no layout.
static inline int cloak_gpgme_result_has_no_mdc(gpgme_decrypt_result_t result) {
    return result != NULL && result->legacy_cipher_nomdc;
}
#endif

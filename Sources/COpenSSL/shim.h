#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <sys/types.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/x509v3.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/ec.h>
#include <openssl/bn.h>

/// EVP_PKEY_KEYPAIR, a macro of macros Swift does not import (EVP_PKEY_fromdata's selection).
static inline int cloak_evp_pkey_keypair(void) { return EVP_PKEY_KEYPAIR; }
#endif

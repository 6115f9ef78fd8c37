#ifndef CPKCS11_SHIM_H
#define CPKCS11_SHIM_H
// The PKCS#11 (Cryptoki) interface as p11-kit ships it (Debian: libp11-kit-dev): the types and
// constants only. Cloak links no PKCS#11 library: it loads the module the URI names with dlopen
// and calls it through the module's function list.
#include <dlfcn.h>
#include "/usr/include/p11-kit-1/p11-kit/pkcs11.h"

// Flags the importer may not fold (shifts).
static const unsigned long cloak_CKF_OS_LOCKING_OK = CKF_OS_LOCKING_OK;
static const unsigned long cloak_CKF_RW_SESSION = CKF_RW_SESSION;
static const unsigned long cloak_CKF_SERIAL_SESSION = CKF_SERIAL_SESSION;
static const unsigned long cloak_CKF_TOKEN_PRESENT = CKF_TOKEN_PRESENT;
#endif

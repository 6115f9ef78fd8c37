#ifndef CLOAK_EMBEDDED_ASSETS_H
#define CLOAK_EMBEDDED_ASSETS_H
/* The browser files Cloak serves (Cloak Elements' and the console's), compiled into the binary
   with C23's #embed: a C compiler copies the bytes in a fraction of a second, where SwiftPM's
   `embedInCode` wrote them as a Swift array literal that took 45 s of a 2-core build to
   type-check and compile (twice: module and objects). ElementsAssets and ConsoleAssets own them. */
#include <stddef.h>

typedef struct {
    const char *name;           /* the file's name, as served */
    const unsigned char *bytes; /* its exact bytes (followed by a NUL not counted in length) */
    size_t length;
} cloak_embedded_asset;

/* Sources/CloakService/Elements/Assets, `*count` files. */
const cloak_embedded_asset *cloak_elements_assets(size_t *count);
/* Sources/CloakService/Console/Assets, `*count` files. */
const cloak_embedded_asset *cloak_console_assets(size_t *count);

#endif

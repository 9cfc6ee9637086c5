/* SPDX-License-Identifier: Apache-2.0 */
#include "util/dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

int dl_load_symbols(const char *soname, const struct dl_symbol *symbols, size_t n_symbols,
                    char *error, size_t error_size)
{
        void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
                const char *e = dlerror();
                snprintf(error, error_size, "%s", e ? e : soname);
                return -ENOENT;
        }
        for (size_t i = 0; i < n_symbols; i++) {
                *symbols[i].slot = dlsym(h, symbols[i].name);
                if (!*symbols[i].slot) {
                        snprintf(error, error_size, "%s: no symbol %s", soname, symbols[i].name);
                        dlclose(h);
                        return -ENOENT;
                }
        }
        return 0;
}

bool dl_is_loaded(const char *soname)
{
        void *h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
        if (h)
                dlclose(h); /* drops only the reference RTLD_NOLOAD took */
        return h != NULL;
}

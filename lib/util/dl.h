/* SPDX-License-Identifier: Apache-2.0 */
/* Loading a shared library on first use (lib/kube/curl-loader.c, lib/httpd/mhd-loader.c): the
 * program is not linked against it, so it maps the library and its dependencies only in the
 * modes that call it. dl_load_symbols() opens the soname (RTLD_NOW | RTLD_LOCAL, so nothing else
 * binds to its symbols by accident) and fills every slot; the handle then stays open for the
 * life of the process. On failure no slot is to be used, error says why and the library is
 * closed again. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct dl_symbol {
        const char *name;
        void **slot;
};

int dl_load_symbols(const char *soname, const struct dl_symbol *symbols, size_t n_symbols,
                    char *error, size_t error_size);

/* Whether the process has the library mapped, without loading it: tests ask whether a mode
 * loaded it at all. */
bool dl_is_loaded(const char *soname);

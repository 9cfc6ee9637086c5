/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl is loaded on first use (see curl-loader.c): a standalone agent never maps it. */
#pragma once

#include <stdbool.h>

/* Why libcurl could not be loaded (dlerror() text), or NULL when it is loaded. Loads it. */
const char *curl_loader_error(void);

/* Whether libcurl is mapped in this process; does not load it. */
bool curl_loader_loaded(void);

/* SPDX-License-Identifier: Apache-2.0 */
/* libmicrohttpd is loaded on first use (see mhd-loader.c): an agent without --metrics-listen
 * never maps it, nor the TLS libraries Debian's build links it with. */
#pragma once

#include <stdbool.h>

/* Why libmicrohttpd could not be loaded (dlerror() text), or NULL when it is loaded. Loads it. */
const char *mhd_loader_error(void);

/* Whether libmicrohttpd is mapped in this process; does not load it. */
bool mhd_loader_loaded(void);

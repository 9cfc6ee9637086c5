/* SPDX-License-Identifier: Apache-2.0 */
/* Shared set-up of the libFuzzer targets: the product's own logging stays quiet (a fuzzer prints
 * millions of rejected inputs) and inputs become NUL-terminated copies where the code under test
 * takes C strings. Every target frees all it allocated: LeakSanitizer reports are findings. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <syslog.h>

#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        /* FUZZ_LOG=1 shows the product's messages when reproducing one input. */
        log_setup(LOG_TARGET_STDERR, getenv("FUZZ_LOG") ? LOG_DEBUG : -1);
        return 0;
}

/* data as a C string (stops at an embedded NUL, as the product's readers would); free(). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
        char *s = malloc(size + 1);
        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

/* A new private directory for targets that need files, on tmpfs when there is one (a disk-backed
 * /tmp costs an order of magnitude in executions per second). Writes the path into buf. */
static inline void fuzz_mkdtemp(char *buf, size_t size, const char *name)
{
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        if ((size_t)snprintf(buf, size, "%s/%s.XXXXXX", base, name) >= size || !mkdtemp(buf))
                abort();
}

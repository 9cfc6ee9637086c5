/* SPDX-License-Identifier: Apache-2.0 */
/* The problems of one object, accumulated as "field X: reason; field Y: reason" so a user sees
 * every mistake of a policy at once. Allocation failure is remembered (oom) rather than
 * returned, so callers can report many fields without checking each call. */
#pragma once

#include <stdbool.h>

struct field_errors {
        char *text; /* NULL while there is none; the caller frees it */
        bool oom;
};

/* Frees the text: for `_cleanup_(field_errors_done)`. */
void field_errors_done(struct field_errors *e);
void field_errors_add(struct field_errors *e, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

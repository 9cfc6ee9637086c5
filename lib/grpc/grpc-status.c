/* SPDX-License-Identifier: Apache-2.0 */
#include "grpc/grpc-status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/parse.h"

static const char *const status_names[_GRPC_STATUS_MAX] = {
        [GRPC_STATUS_OK] = "OK",
        [GRPC_STATUS_CANCELLED] = "CANCELLED",
        [GRPC_STATUS_UNKNOWN] = "UNKNOWN",
        [GRPC_STATUS_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
        [GRPC_STATUS_DEADLINE_EXCEEDED] = "DEADLINE_EXCEEDED",
        [GRPC_STATUS_NOT_FOUND] = "NOT_FOUND",
        [GRPC_STATUS_ALREADY_EXISTS] = "ALREADY_EXISTS",
        [GRPC_STATUS_PERMISSION_DENIED] = "PERMISSION_DENIED",
        [GRPC_STATUS_RESOURCE_EXHAUSTED] = "RESOURCE_EXHAUSTED",
        [GRPC_STATUS_FAILED_PRECONDITION] = "FAILED_PRECONDITION",
        [GRPC_STATUS_ABORTED] = "ABORTED",
        [GRPC_STATUS_OUT_OF_RANGE] = "OUT_OF_RANGE",
        [GRPC_STATUS_UNIMPLEMENTED] = "UNIMPLEMENTED",
        [GRPC_STATUS_INTERNAL] = "INTERNAL",
        [GRPC_STATUS_UNAVAILABLE] = "UNAVAILABLE",
        [GRPC_STATUS_DATA_LOSS] = "DATA_LOSS",
        [GRPC_STATUS_UNAUTHENTICATED] = "UNAUTHENTICATED",
};

const char *grpc_status_to_string(int code)
{
        if (code < 0 || code >= _GRPC_STATUS_MAX)
                return "UNKNOWN_STATUS";
        return status_names[code];
}

static int needs_escape(unsigned char c)
{
        return c < 0x20 || c > 0x7e || c == '%';
}

char *grpc_percent_encode(const char *s)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t n = 0;
        for (const unsigned char *p = (const unsigned char *)s; *p; p++)
                n += needs_escape(*p) ? 3 : 1;
        char *out = malloc(n + 1), *o = out;
        if (!out)
                return NULL;
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                if (needs_escape(*p)) {
                        *o++ = '%';
                        *o++ = hex[*p >> 4];
                        *o++ = hex[*p & 0xf];
                } else
                        *o++ = (char)*p;
        }
        *o = 0;
        return out;
}

char *grpc_percent_decode(const char *s, size_t len)
{
        char *out = malloc(len + 1), *o = out;
        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                int hi, lo;
                if (s[i] == '%' && i + 2 < len && (hi = hex_digit_value(s[i + 1])) >= 0 &&
                    (lo = hex_digit_value(s[i + 2])) >= 0) {
                        *o++ = (char)(hi << 4 | lo);
                        i += 2;
                } else
                        *o++ = s[i];
        }
        *o = 0;
        return out;
}

int(grpc_fail)(struct grpc_status *st, int code, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        st->code = code;
        vsnprintf(st->message, sizeof(st->message), fmt, ap);
        va_end(ap);
        return code;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* gRPC status codes and the percent-encoding of `grpc-message`.
 *
 * The status travels in the `grpc-status` trailer as a decimal number, the human-readable text
 * in `grpc-message`, percent-encoded: bytes outside 0x20..0x7e and '%' itself become %XX. The
 * decoder is lenient like grpc-go: a malformed escape is kept literally. Pure. */
#pragma once

#include <stddef.h>

enum grpc_status_code {
        GRPC_STATUS_OK = 0,
        GRPC_STATUS_CANCELLED = 1,
        GRPC_STATUS_UNKNOWN = 2,
        GRPC_STATUS_INVALID_ARGUMENT = 3,
        GRPC_STATUS_DEADLINE_EXCEEDED = 4,
        GRPC_STATUS_NOT_FOUND = 5,
        GRPC_STATUS_ALREADY_EXISTS = 6,
        GRPC_STATUS_PERMISSION_DENIED = 7,
        GRPC_STATUS_RESOURCE_EXHAUSTED = 8,
        GRPC_STATUS_FAILED_PRECONDITION = 9,
        GRPC_STATUS_ABORTED = 10,
        GRPC_STATUS_OUT_OF_RANGE = 11,
        GRPC_STATUS_UNIMPLEMENTED = 12,
        GRPC_STATUS_INTERNAL = 13,
        GRPC_STATUS_UNAVAILABLE = 14,
        GRPC_STATUS_DATA_LOSS = 15,
        GRPC_STATUS_UNAUTHENTICATED = 16,
        _GRPC_STATUS_MAX,
};

/* "OK", "INVALID_ARGUMENT", ...; "UNKNOWN_STATUS" outside the table. */
const char *grpc_status_to_string(int code);

/* New NUL-terminated string; NULL on allocation failure. */
char *grpc_percent_encode(const char *s);
char *grpc_percent_decode(const char *s, size_t len);

/* A status with its message, as handlers return it. */
#define GRPC_STATUS_MESSAGE_MAX 512
struct grpc_status {
        int code;
        char message[GRPC_STATUS_MESSAGE_MAX];
};

/* Sets code and a printf-formatted message; returns code so handlers can `return grpc_fail(...)`.
 */
int grpc_fail(struct grpc_status *st, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __clang_analyzer__
/* Static analysis only: show the analyzer (which cannot see into grpc-status.c) that the
 * result is `code`, so it stops exploring "failed but returned OK" paths. */
#define grpc_fail(st, code, ...)                                                                   \
        ({                                                                                         \
                const int grpc_fail_code_ = (code);                                                \
                (void)grpc_fail((st), grpc_fail_code_, __VA_ARGS__);                               \
                grpc_fail_code_;                                                                   \
        })
#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Pure parsers: text in, value out, no I/O and no logging, so the pure layers (model, policy,
 * plan) can use them. Functions return 0 or a negative errno. The file readers built on them
 * are in util/fileio.h. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* snprintf into buf; -ENAMETOOLONG instead of a silently truncated path. */
int path_printf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Strict integer parsing helpers used by file readers and config parsers alike. Garbage, empty
 * or out-of-range text is -EINVAL/-ERANGE. */
int parse_int(const char *s, int *ret);
int parse_hex_u32(const char *s, uint32_t *ret); /* "0x15b3" or "15b3" */
/* "on" is 1, "off" 0, anything else -EINVAL (an int, so that callers can keep -1 for unset). */
int parse_on_off(const char *s, int *ret);
/* 0-15 for a hex digit of either case, -1 for anything else. */
int hex_digit_value(char c);

/* SPDX-License-Identifier: Apache-2.0 */
/* Counted string lists (char **list, size_t n): the device plugin's ID and path lists. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Appends a string copy to a list. 0 or -ENOMEM (the list is unchanged then). */
int strv_push_dup(char ***list, size_t *n, const char *s);
/* Frees every string and the list. */
void strv_free_n(char **list, size_t n);
bool strv_contains(char *const *list, size_t n, const char *s);

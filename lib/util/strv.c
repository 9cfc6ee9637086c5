/* SPDX-License-Identifier: Apache-2.0 */
#include "util/strv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int strv_push_dup(char ***list, size_t *n, const char *s)
{
        char *d = strdup(s);
        if (!d)
                return -ENOMEM;
        /* One at a time: the lists are short, most callers look for a duplicate (O(n)) before
         * each push, and the API carries no capacity to grow into. */
        char **l = realloc(*list, (*n + 1) * sizeof(char *));
        if (!l) {
                free(d);
                return -ENOMEM;
        }
        l[(*n)++] = d;
        *list = l;
        return 0;
}

void strv_free_n(char **list, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(list[i]);
        free(list);
}

bool strv_contains(char *const *list, size_t n, const char *s)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(list[i], s) == 0)
                        return true;
        return false;
}

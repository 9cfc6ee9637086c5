/* SPDX-License-Identifier: Apache-2.0 */
/* Growing a counted array (T *items; size_t n_items, cap_items) by appending: the capacity
 * doubles, so n appends cost O(n) copying rather than O(n²) with a realloc per element.
 * Header-only so that every layer (and the CNI plugin, which links no layer) can use it.
 *
 *     if (GROW_ARRAY(list->items, list->cap_items, list->n_items + 1) < 0)
 *             return -ENOMEM;
 *     list->items[list->n_items++] = item;
 *
 * The capacity must never claim more than was allocated: whoever replaces, steals or frees
 * the array resets it with the pointer (a capacity below n, e.g. 0 for an array allocated to
 * exactly n elements elsewhere, is safe: it only makes the next growth copy). */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Makes *p (capacity *cap elements of size bytes) hold at least need elements, at least
 * doubling. 0, or -ENOMEM on allocation failure or overflow (*p and *cap unchanged then). */
static inline int grow_array(void **p, size_t *cap, size_t need, size_t size)
{
        if (need <= *cap)
                return 0;
        if (size == 0 || need > SIZE_MAX / size)
                return -ENOMEM;
        size_t n = *cap <= SIZE_MAX / 2 ? *cap * 2 : need;
        if (n < 8)
                n = 8;
        if (n < need || n > SIZE_MAX / size)
                n = need;
        void *q = realloc(*p, n * size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *cap = n;
        return 0;
}

/* GROW_ARRAY(items, cap, need): grow_array() for a typed array lvalue (no void ** aliasing). */
#define GROW_ARRAY(items, cap, need)                                                               \
        ({                                                                                         \
                void *_grow_p = (items);                                                           \
                int _grow_r = grow_array(&_grow_p, &(cap), (need), sizeof(*(items)));              \
                if (_grow_r == 0)                                                                  \
                        (items) = _grow_p;                                                         \
                _grow_r;                                                                           \
        })

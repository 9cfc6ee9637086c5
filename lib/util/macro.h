/* SPDX-License-Identifier: Apache-2.0 */
/* Small shared macros: array sizes, cleanup attributes, errno helpers.
 * Header-only; nothing here allocates or logs. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

#define _cleanup_(f) __attribute__((cleanup(f)))
/* For a variable that exists only to be cleaned up (clang warns it is unused). */
#define _unused_ __attribute__((unused))

static inline void freep(void *p)
{
        free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd)
{
        if (*fd >= 0)
                close(*fd);
        *fd = -1; /* closed early by hand, the cleanup at scope end does nothing */
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* DEFINE_TRIVIAL_CLEANUP_FUNC(struct foo *, foo_free) defines foo_freep() for
 * `_cleanup_(foo_freep) struct foo *f = NULL;`. Value types with a `_done(struct foo *)`
 * function need nothing: `_cleanup_(foo_done) struct foo f = { 0 };`. JSON values use
 * jansson's own `json_auto_t *v = NULL;`. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                    \
        static inline void func##p(__typeof__(type) *p)                                            \
        {                                                                                          \
                if (*p)                                                                            \
                        func(*p);                                                                  \
        }

/* Hands ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                                                                                \
        ({                                                                                         \
                __typeof__(p) _p = (p);                                                            \
                (p) = NULL;                                                                        \
                _p;                                                                                \
        })

/* Hands a file descriptor out of a _cleanup_close_ variable. */
#define TAKE_FD(fd)                                                                                \
        ({                                                                                         \
                int _fd = (fd);                                                                    \
                (fd) = -1;                                                                         \
                _fd;                                                                               \
        })

/* errno as a negative value, never 0 (some libc paths leave errno unset). */
static inline int negative_errno(void)
{
        const int e = errno > 0 ? -errno : -EIO;
#ifdef __clang_analyzer__
        if (e >= 0) /* clang-tidy's analyzer cannot infer -errno < 0 from errno > 0 */
                __builtin_unreachable();
#endif
        return e;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl, loaded on first use.
 *
 * Only cluster mode talks HTTP, yet linking libcurl maps its TLS/Kerberos/LDAP dependency chain
 * (libcrypto, libgnutls, krb5, libldap, ...: ~5 MB of file-backed RSS) into every sriov-agent
 * process, standalone ones included. So the program is not linked against libcurl: this file
 * defines the libcurl functions lib/kube calls, and the first call dlopen()s libcurl.so.4 and
 * forwards to it. The callers (lib/kube/http.c) use libcurl's own API unchanged.
 *
 * When libcurl cannot be loaded, curl_global_init() fails with CURLE_FAILED_INIT and the caller
 * reports "cannot initialise libcurl"; curl_loader_error() says why. */
#define CURL_DISABLE_TYPECHECK 1 /* the typecheck macros would rename our definitions */
#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kube/curl-loader.h"
#include "util/dl.h"

/* The soname libcurl-dev's libcurl.so points at; the ABI these prototypes are compiled for. */
#define LIBCURL_SONAME "libcurl.so.4"

struct curl_api {
        CURLcode (*global_init)(long);
        void (*global_cleanup)(void);
        CURL *(*easy_init)(void);
        CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
        CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
        void (*easy_cleanup)(CURL *);
        char *(*easy_escape)(CURL *, const char *, int);
        const char *(*easy_strerror)(CURLcode);
        void (*free)(void *);
        struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
        void (*slist_free_all)(struct curl_slist *);
        CURLM *(*multi_init)(void);
        CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
        CURLMcode (*multi_add_handle)(CURLM *, CURL *);
        CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
        CURLMcode (*multi_assign)(CURLM *, curl_socket_t, void *);
        CURLMcode (*multi_socket_action)(CURLM *, curl_socket_t, int, int *);
        CURLMsg *(*multi_info_read)(CURLM *, int *);
        CURLMcode (*multi_cleanup)(CURLM *);
        const char *(*multi_strerror)(CURLMcode);
};

/* Process-wide by nature, like libcurl's own global state: filled once under pthread_once and
 * read-only afterwards. */
static struct {
        pthread_once_t once;
        struct curl_api api;
        bool loaded;
        char error[256];
} loader = { .once = PTHREAD_ONCE_INIT };

static void load(void)
{
        const struct dl_symbol syms[] = {
#define SYM(field, name) { #name, (void **)&loader.api.field }
                SYM(global_init, curl_global_init),
                SYM(global_cleanup, curl_global_cleanup),
                SYM(easy_init, curl_easy_init),
                SYM(easy_setopt, curl_easy_setopt),
                SYM(easy_getinfo, curl_easy_getinfo),
                SYM(easy_cleanup, curl_easy_cleanup),
                SYM(easy_escape, curl_easy_escape),
                SYM(easy_strerror, curl_easy_strerror),
                SYM(free, curl_free),
                SYM(slist_append, curl_slist_append),
                SYM(slist_free_all, curl_slist_free_all),
                SYM(multi_init, curl_multi_init),
                SYM(multi_setopt, curl_multi_setopt),
                SYM(multi_add_handle, curl_multi_add_handle),
                SYM(multi_remove_handle, curl_multi_remove_handle),
                SYM(multi_assign, curl_multi_assign),
                SYM(multi_socket_action, curl_multi_socket_action),
                SYM(multi_info_read, curl_multi_info_read),
                SYM(multi_cleanup, curl_multi_cleanup),
                SYM(multi_strerror, curl_multi_strerror),
#undef SYM
        };
        loader.loaded = dl_load_symbols(LIBCURL_SONAME, syms, sizeof(syms) / sizeof(syms[0]),
                                        loader.error, sizeof(loader.error)) == 0;
}

static const struct curl_api *api(void)
{
        pthread_once(&loader.once, load);
        return loader.loaded ? &loader.api : NULL;
}

const char *curl_loader_error(void)
{
        return api() ? NULL : loader.error;
}

bool curl_loader_loaded(void)
{
        return dl_is_loaded(LIBCURL_SONAME);
}

CURLcode curl_global_init(long flags)
{
        const struct curl_api *a = api();
        return a ? a->global_init(flags) : CURLE_FAILED_INIT;
}

void curl_global_cleanup(void)
{
        const struct curl_api *a = api();
        if (a)
                a->global_cleanup();
}

CURL *curl_easy_init(void)
{
        const struct curl_api *a = api();
        return a ? a->easy_init() : NULL;
}

/* libcurl's option numbers carry their argument's type (CURLOPTTYPE_* ranges, the same for
 * easy and multi options): each option takes exactly one argument of that type. */
enum arg_kind { ARG_LONG, ARG_POINTER, ARG_FUNCTION, ARG_OFF_T };

static enum arg_kind arg_kind_of(int option)
{
        if (option < CURLOPTTYPE_OBJECTPOINT)
                return ARG_LONG;
        if (option < CURLOPTTYPE_FUNCTIONPOINT)
                return ARG_POINTER;
        if (option < CURLOPTTYPE_OFF_T)
                return ARG_FUNCTION;
        if (option < CURLOPTTYPE_BLOB)
                return ARG_OFF_T;
        return ARG_POINTER; /* struct curl_blob * */
}

union option_arg {
        long l;
        void *p;
        void (*f)(void);
        curl_off_t o;
};

#define FORWARD_OPTION(r, call, handle, option, ap)                                                \
        do {                                                                                       \
                union option_arg arg_;                                                             \
                switch (arg_kind_of(option)) {                                                     \
                case ARG_LONG:                                                                     \
                        arg_.l = va_arg(ap, long);                                                 \
                        (r) = call(handle, option, arg_.l);                                        \
                        break;                                                                     \
                case ARG_POINTER:                                                                  \
                        arg_.p = va_arg(ap, void *);                                               \
                        (r) = call(handle, option, arg_.p);                                        \
                        break;                                                                     \
                case ARG_FUNCTION:                                                                 \
                        arg_.f = va_arg(ap, void (*)(void));                                       \
                        (r) = call(handle, option, arg_.f);                                        \
                        break;                                                                     \
                default:                                                                           \
                        arg_.o = va_arg(ap, curl_off_t);                                           \
                        (r) = call(handle, option, arg_.o);                                        \
                        break;                                                                     \
                }                                                                                  \
        } while (0)

CURLcode curl_easy_setopt(CURL *easy, CURLoption option, ...)
{
        const struct curl_api *a = api();
        if (!a)
                return CURLE_FAILED_INIT;
        va_list ap;
        va_start(ap, option);
        CURLcode r;
        FORWARD_OPTION(r, a->easy_setopt, easy, option, ap);
        va_end(ap);
        return r;
}

CURLcode curl_easy_getinfo(CURL *easy, CURLINFO info, ...)
{
        const struct curl_api *a = api();
        if (!a)
                return CURLE_FAILED_INIT;
        va_list ap;
        va_start(ap, info);
        void *out = va_arg(ap, void *); /* every CURLINFO takes one pointer */
        va_end(ap);
        return a->easy_getinfo(easy, info, out);
}

void curl_easy_cleanup(CURL *easy)
{
        const struct curl_api *a = api();
        if (a)
                a->easy_cleanup(easy);
}

char *curl_easy_escape(CURL *easy, const char *s, int length)
{
        const struct curl_api *a = api();
        return a ? a->easy_escape(easy, s, length) : NULL;
}

const char *curl_easy_strerror(CURLcode code)
{
        const struct curl_api *a = api();
        return a ? a->easy_strerror(code) : "libcurl not loaded";
}

void curl_free(void *p)
{
        const struct curl_api *a = api();
        if (a)
                a->free(p);
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s)
{
        const struct curl_api *a = api();
        return a ? a->slist_append(list, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
        const struct curl_api *a = api();
        if (a)
                a->slist_free_all(list);
}

CURLM *curl_multi_init(void)
{
        const struct curl_api *a = api();
        return a ? a->multi_init() : NULL;
}

CURLMcode curl_multi_setopt(CURLM *multi, CURLMoption option, ...)
{
        const struct curl_api *a = api();
        if (!a)
                return CURLM_INTERNAL_ERROR;
        va_list ap;
        va_start(ap, option);
        CURLMcode r;
        FORWARD_OPTION(r, a->multi_setopt, multi, option, ap);
        va_end(ap);
        return r;
}

CURLMcode curl_multi_add_handle(CURLM *multi, CURL *easy)
{
        const struct curl_api *a = api();
        return a ? a->multi_add_handle(multi, easy) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_remove_handle(CURLM *multi, CURL *easy)
{
        const struct curl_api *a = api();
        return a ? a->multi_remove_handle(multi, easy) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_assign(CURLM *multi, curl_socket_t fd, void *p)
{
        const struct curl_api *a = api();
        return a ? a->multi_assign(multi, fd, p) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_socket_action(CURLM *multi, curl_socket_t fd, int mask, int *running)
{
        const struct curl_api *a = api();
        return a ? a->multi_socket_action(multi, fd, mask, running) : CURLM_INTERNAL_ERROR;
}

CURLMsg *curl_multi_info_read(CURLM *multi, int *left)
{
        const struct curl_api *a = api();
        return a ? a->multi_info_read(multi, left) : NULL;
}

CURLMcode curl_multi_cleanup(CURLM *multi)
{
        const struct curl_api *a = api();
        return a ? a->multi_cleanup(multi) : CURLM_INTERNAL_ERROR;
}

const char *curl_multi_strerror(CURLMcode code)
{
        const struct curl_api *a = api();
        return a ? a->multi_strerror(code) : "libcurl not loaded";
}

/* SPDX-License-Identifier: Apache-2.0 */
/* libmicrohttpd, loaded on first use.
 *
 * Only the metrics endpoint serves HTTP, yet linking libmicrohttpd maps Debian's build with its
 * HTTPS chain (GnuTLS, libgcrypt, nettle, gmp, p11-kit, ...: ~3 MB of file-backed RSS) into
 * every agent, with or without --metrics-listen. So the program is not linked against it: this
 * file defines the functions lib/httpd calls, and the first call dlopen()s libmicrohttpd.so.12
 * and forwards to it (the pattern of lib/kube/curl-loader.c).
 *
 * The two variadic info getters are forwarded without extra arguments: every info type
 * httpd.c asks for takes none. MHD_start_daemon() goes through MHD_start_daemon_va().
 * When the library cannot be loaded, MHD_start_daemon() returns NULL and mhd_loader_error()
 * says why. */
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "httpd/mhd-loader.h"
#include "util/dl.h"

/* The soname libmicrohttpd-dev's libmicrohttpd.so points at (and the image's own build). */
#define LIBMHD_SONAME "libmicrohttpd.so.12"

struct mhd_api {
        struct MHD_Daemon *(*start_daemon_va)(unsigned int, uint16_t, MHD_AcceptPolicyCallback,
                                              void *, MHD_AccessHandlerCallback, void *, va_list);
        void (*stop_daemon)(struct MHD_Daemon *);
        enum MHD_Result (*run)(struct MHD_Daemon *);
        enum MHD_Result (*get_timeout)(struct MHD_Daemon *, MHD_UNSIGNED_LONG_LONG *);
        enum MHD_Result (*add_connection)(struct MHD_Daemon *, MHD_socket, const struct sockaddr *,
                                          socklen_t);
        const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType,
                                                       ...);
        const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *,
                                                               enum MHD_ConnectionInfoType, ...);
        const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind,
                                               const char *);
        void (*suspend_connection)(struct MHD_Connection *);
        void (*resume_connection)(struct MHD_Connection *);
        struct MHD_Response *(*create_response_from_buffer)(size_t, void *,
                                                            enum MHD_ResponseMemoryMode);
        enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
        enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int,
                                          struct MHD_Response *);
        void (*destroy_response)(struct MHD_Response *);
};

/* Process-wide by nature, like the library's own state: filled once under pthread_once and
 * read-only afterwards. */
static struct {
        pthread_once_t once;
        struct mhd_api api;
        bool loaded;
        char error[256];
} loader = { .once = PTHREAD_ONCE_INIT };

static void load(void)
{
        const struct dl_symbol syms[] = {
#define SYM(field, name) { #name, (void **)&loader.api.field }
                SYM(start_daemon_va, MHD_start_daemon_va),
                SYM(stop_daemon, MHD_stop_daemon),
                SYM(run, MHD_run),
                SYM(get_timeout, MHD_get_timeout),
                SYM(add_connection, MHD_add_connection),
                SYM(get_daemon_info, MHD_get_daemon_info),
                SYM(get_connection_info, MHD_get_connection_info),
                SYM(lookup_connection_value, MHD_lookup_connection_value),
                SYM(suspend_connection, MHD_suspend_connection),
                SYM(resume_connection, MHD_resume_connection),
                SYM(create_response_from_buffer, MHD_create_response_from_buffer),
                SYM(add_response_header, MHD_add_response_header),
                SYM(queue_response, MHD_queue_response),
                SYM(destroy_response, MHD_destroy_response),
#undef SYM
        };
        loader.loaded = dl_load_symbols(LIBMHD_SONAME, syms, sizeof(syms) / sizeof(syms[0]),
                                        loader.error, sizeof(loader.error)) == 0;
}

static const struct mhd_api *api(void)
{
        pthread_once(&loader.once, load);
        return loader.loaded ? &loader.api : NULL;
}

const char *mhd_loader_error(void)
{
        return api() ? NULL : loader.error;
}

bool mhd_loader_loaded(void)
{
        return dl_is_loaded(LIBMHD_SONAME);
}

/* Every function below is reached only after MHD_start_daemon() succeeded, which loaded the
 * library; the checks keep a caller that broke that rule from jumping through NULL. */

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
                                    void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
        const struct mhd_api *a = api();
        if (!a)
                return NULL;
        va_list ap;
        va_start(ap, dh_cls);
        struct MHD_Daemon *d = a->start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
        va_end(ap);
        return d;
}

void MHD_stop_daemon(struct MHD_Daemon *daemon)
{
        const struct mhd_api *a = api();
        if (a)
                a->stop_daemon(daemon);
}

enum MHD_Result MHD_run(struct MHD_Daemon *daemon)
{
        const struct mhd_api *a = api();
        return a ? a->run(daemon) : MHD_NO;
}

enum MHD_Result MHD_get_timeout(struct MHD_Daemon *daemon, MHD_UNSIGNED_LONG_LONG *timeout)
{
        const struct mhd_api *a = api();
        return a ? a->get_timeout(daemon, timeout) : MHD_NO;
}

enum MHD_Result MHD_add_connection(struct MHD_Daemon *daemon, MHD_socket client_socket,
                                   const struct sockaddr *addr, socklen_t addrlen)
{
        const struct mhd_api *a = api();
        return a ? a->add_connection(daemon, client_socket, addr, addrlen) : MHD_NO;
}

const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon,
                                                enum MHD_DaemonInfoType info_type, ...)
{
        const struct mhd_api *a = api();
        return a ? a->get_daemon_info(daemon, info_type) : NULL;
}

const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *connection,
                                                        enum MHD_ConnectionInfoType info_type, ...)
{
        const struct mhd_api *a = api();
        return a ? a->get_connection_info(connection, info_type) : NULL;
}

const char *MHD_lookup_connection_value(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                        const char *key)
{
        const struct mhd_api *a = api();
        return a ? a->lookup_connection_value(connection, kind, key) : NULL;
}

void MHD_suspend_connection(struct MHD_Connection *connection)
{
        const struct mhd_api *a = api();
        if (a)
                a->suspend_connection(connection);
}

void MHD_resume_connection(struct MHD_Connection *connection)
{
        const struct mhd_api *a = api();
        if (a)
                a->resume_connection(connection);
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
                                                     enum MHD_ResponseMemoryMode mode)
{
        const struct mhd_api *a = api();
        return a ? a->create_response_from_buffer(size, buffer, mode) : NULL;
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *response, const char *header,
                                        const char *content)
{
        const struct mhd_api *a = api();
        return a ? a->add_response_header(response, header, content) : MHD_NO;
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                   struct MHD_Response *response)
{
        const struct mhd_api *a = api();
        return a ? a->queue_response(connection, status_code, response) : MHD_NO;
}

void MHD_destroy_response(struct MHD_Response *response)
{
        const struct mhd_api *a = api();
        if (a)
                a->destroy_response(response);
}

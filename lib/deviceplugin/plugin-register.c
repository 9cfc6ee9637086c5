/* SPDX-License-Identifier: Apache-2.0 */
/* Registration with the kubelet and its retry with backoff (the RPC handlers are in plugin.c). */
#include <errno.h>
#include <sys/stat.h>

#include "deviceplugin.pb-c.h"
#include "deviceplugin/plugin-internal.h"
#include "grpc/grpc-client.h"
#include "util/log.h"

#define REGISTER_TIMEOUT_USEC (5 * 1000000ULL)
/* A kubelet.sock that just appeared may not listen yet (bind comes before listen): the first
 * retry is soon, so that registration follows the socket within milliseconds. */
#define BACKOFF_MIN_USEC (10 * 1000ULL)
#define BACKOFF_MAX_USEC (5 * 1000000ULL)

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct dp_plugin *p = userdata;
        p->retry_timer = sd_event_source_disable_unref(p->retry_timer);
        dp_plugin_register_now(p);
        return 0;
}

static void schedule_retry(struct dp_plugin *p)
{
        if (p->draining)
                return;
        if (p->retry_timer)
                return;
        p->backoff_usec = p->backoff_usec ? p->backoff_usec * 2 : BACKOFF_MIN_USEC;
        if (p->backoff_usec > BACKOFF_MAX_USEC)
                p->backoff_usec = BACKOFF_MAX_USEC;
        if (sd_event_add_time_relative(p->event, &p->retry_timer, CLOCK_MONOTONIC, p->backoff_usec,
                                       10000, on_retry, p) < 0)
                log_ctx_msg(LOG_ERR, 0, LOG_RES(p), "cannot arm the registration retry timer");
}

static void on_registered(void *userdata, const struct grpc_status *st, const uint8_t *resp,
                          size_t len)
{
        struct dp_plugin *p = userdata;
        p->register_call = NULL;
        if (st->code != GRPC_STATUS_OK) {
                p->stats.registration_failures++;
                log_ctx_msg(LOG_WARNING, 0, LOG_RES(p), "kubelet refused registration: %s: %s",
                            grpc_status_to_string(st->code), st->message);
                schedule_retry(p);
                return;
        }
        p->registered = true;
        p->stats.registrations++;
        p->backoff_usec = 0;
        log_ctx_msg(LOG_INFO, 0, LOG_RES(p), "registered with the kubelet (endpoint %s)",
                    p->socket_name);
}

void dp_plugin_register_now(struct dp_plugin *p)
{
        struct stat st;
        if (p->draining)
                return; /* stopping: the next process registers */
        grpc_client_call_cancel(p->register_call);
        p->register_call = NULL;
        p->registered = false;
        p->retry_timer = sd_event_source_disable_unref(p->retry_timer);
        if (stat(p->kubelet_socket, &st) < 0) {
                p->kubelet_st = (struct stat){ 0 };
                schedule_retry(p);
                return;
        }
        p->kubelet_st = st;

        V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
        opts.get_preferred_allocation_available = true;
        V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
        req.version = (char *)"v1beta1";
        req.endpoint = p->socket_name;
        req.resource_name = p->pool.resource;
        req.options = &opts;
        uint8_t buf[1024];
        size_t len = v1beta1__register_request__get_packed_size(&req);
        if (len > sizeof(buf)) { /* names are bounded far below this; never silently stuck */
                log_ctx_msg(LOG_ERR, EMSGSIZE, LOG_RES(p), "RegisterRequest too large: %zu bytes",
                            len);
                return;
        }
        v1beta1__register_request__pack(&req, buf);
        int r = grpc_unary_call(p->event, p->kubelet_socket, "/v1beta1.Registration/Register", buf,
                                len, REGISTER_TIMEOUT_USEC, on_registered, p, &p->register_call);
        if (r < 0) {
                log_ctx_msg(LOG_DEBUG, r, LOG_RES(p), "kubelet not reachable at %s",
                            p->kubelet_socket);
                schedule_retry(p);
        }
}

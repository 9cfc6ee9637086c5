/* SPDX-License-Identifier: Apache-2.0 */
#include "grpc/grpc-conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"

static int on_defer(sd_event_source *s, void *userdata)
{
        struct grpc_conn *c = userdata;
        sd_event_source_set_enabled(s, SD_EVENT_OFF);
        if (c->on_dead)
                c->on_dead(c, c->userdata); /* may free c */
        return 0;
}

void grpc_conn_kill(struct grpc_conn *c)
{
        if (c->dead)
                return;
        c->dead = true;
        if (c->io)
                sd_event_source_set_enabled(c->io, SD_EVENT_OFF);
        if (c->defer)
                sd_event_source_set_enabled(c->defer, SD_EVENT_ONESHOT);
}

static void update_events(struct grpc_conn *c)
{
        if (c->dead)
                return;
        if (!nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session) &&
            c->n_out == c->out_off) {
                grpc_conn_kill(c); /* both sides finished, e.g. after GOAWAY */
                return;
        }
        uint32_t events = EPOLLIN | EPOLLRDHUP;
        if (c->n_out > c->out_off || c->more)
                events |= EPOLLOUT;
        sd_event_source_set_io_events(c->io, events);
}

#define OUT_HIGH_WATER (256u * 1024u)

static int out_append(struct grpc_conn *c, const uint8_t *data, size_t n)
{
        if (c->out_off > 0 && c->out_off == c->n_out)
                c->out_off = c->n_out = 0;
        if (c->n_out + n > c->out_allocated) {
                size_t size = c->out_allocated ? c->out_allocated : 16384;
                while (size < c->n_out + n)
                        size *= 2;
                uint8_t *b = realloc(c->out, size);
                if (!b)
                        return -ENOMEM;
                c->out = b;
                c->out_allocated = size;
        }
        memcpy(c->out + c->n_out, data, n);
        c->n_out += n;
        return 0;
}

int grpc_conn_flush(struct grpc_conn *c)
{
        if (c->dead)
                return -ECONNRESET;
        if (c->hold)
                return 0; /* flushed once the holder is done */
        /* Collect what nghttp2 has (headers, data, trailers of several streams) ... */
        c->more = false;
        for (;;) {
                if (c->n_out - c->out_off >= OUT_HIGH_WATER) {
                        c->more = true; /* more to take once the socket drained */
                        break;
                }
                const uint8_t *data;
                ssize_t n = nghttp2_session_mem_send(c->session, &data);
                if (n < 0) {
                        log_debug("grpc: nghttp2 send failed: %s", nghttp2_strerror((int)n));
                        grpc_conn_kill(c);
                        return -EPROTO;
                }
                if (n == 0)
                        break;
                if (out_append(c, data, (size_t)n) < 0) {
                        grpc_conn_kill(c);
                        return -ENOMEM;
                }
        }
        /* ... and write it in as few calls as the socket allows. */
        while (c->out_off < c->n_out) {
                ssize_t w = send(c->fd, c->out + c->out_off, c->n_out - c->out_off,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                break;
                        int r = -errno;
                        grpc_conn_kill(c);
                        return r;
                }
                c->out_off += (size_t)w;
        }
        if (c->out_off == c->n_out)
                c->out_off = c->n_out = 0;
        update_events(c);
        return 0;
}

/* Feeds nghttp2 what the socket holds; stops at EAGAIN, or after a short read unless
 * until_empty. Returns -ECONNRESET once the connection is dead. */
static int read_available(struct grpc_conn *c, bool until_empty)
{
        uint8_t buf[16384];
        for (;;) {
                ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return 0;
                        grpc_conn_kill(c);
                        return -ECONNRESET;
                }
                if (n == 0) { /* peer closed */
                        grpc_conn_kill(c);
                        return -ECONNRESET;
                }
                c->hold = true;
                ssize_t k = nghttp2_session_mem_recv(c->session, buf, (size_t)n);
                c->hold = false;
                if (k < 0) {
                        log_debug("grpc: dropping connection: %s", nghttp2_strerror((int)k));
                        /* Let nghttp2 send its GOAWAY if it queued one, then drop. */
                        (void)grpc_conn_flush(c);
                        grpc_conn_kill(c);
                        return -ECONNRESET;
                }
                if (c->dead)
                        return -ECONNRESET;
                if (!until_empty && (size_t)n < sizeof(buf))
                        return 0;
        }
}

int grpc_conn_read_now(struct grpc_conn *c)
{
        if (c->dead)
                return -ECONNRESET;
        int r = read_available(c, true);
        if (r < 0)
                return r;
        return grpc_conn_flush(c);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        struct grpc_conn *c = userdata;

        if ((revents & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) &&
            read_available(c, false) < 0)
                return 0;
        (void)grpc_conn_flush(c);
        return 0;
}

int grpc_conn_init(struct grpc_conn *c, sd_event *event, int fd, nghttp2_session *session,
                   grpc_conn_dead_fn on_dead, void *userdata)
{
        *c = (struct grpc_conn){
                .fd = fd, .session = session, .on_dead = on_dead, .userdata = userdata
        };
        int r = sd_event_add_io(event, &c->io, fd, EPOLLIN | EPOLLRDHUP, on_io, c);
        if (r < 0)
                goto fail;
        r = sd_event_add_defer(event, &c->defer, on_defer, c);
        if (r < 0)
                goto fail;
        sd_event_source_set_enabled(c->defer, SD_EVENT_OFF);
        return 0;
fail:
        grpc_conn_done(c);
        return r;
}

void grpc_conn_done(struct grpc_conn *c)
{
        c->io = sd_event_source_disable_unref(c->io);
        c->defer = sd_event_source_disable_unref(c->defer);
        if (c->session) {
                nghttp2_session_del(c->session);
                c->session = NULL;
        }
        if (c->fd >= 0)
                close(c->fd);
        c->fd = -1;
        free(c->out);
        c->out = NULL;
        c->n_out = c->out_off = c->out_allocated = 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* One HTTP/2 connection on a non-blocking socket, pumped by an sd-event I/O source.
 *
 * Owns the fd and the nghttp2 session (created by the caller with its own callbacks and
 * user_data). Reading feeds nghttp2_session_mem_recv; writing drains nghttp2_session_mem_send
 * and keeps a partial write for the next EPOLLOUT. When the peer hangs up, sends something
 * nghttp2 rejects, or both sides are done, the connection is "dead": the owner's on_dead
 * callback runs from a deferred event (never from inside an nghttp2 callback), and the owner
 * then calls grpc_conn_done(). Nothing here blocks. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>
#include <systemd/sd-event.h>

struct grpc_conn;
typedef void (*grpc_conn_dead_fn)(struct grpc_conn *conn, void *userdata);

struct grpc_conn {
        int fd;
        nghttp2_session *session;
        sd_event_source *io, *defer;
        uint8_t *out; /* frames from mem_send not yet written, coalesced so */
        size_t n_out, out_off, out_allocated; /* that one response is one send(2) */
        bool more;                            /* stopped taking frames at the high-water mark */
        bool dead;
        bool hold; /* inside mem_recv (nghttp2 forbids mem_send then) or a batch:
                    * flushes wait until it is cleared */
        grpc_conn_dead_fn on_dead;
        void *userdata;
};

/* Takes ownership of fd and session (also on failure). */
int grpc_conn_init(struct grpc_conn *c, sd_event *event, int fd, nghttp2_session *session,
                   grpc_conn_dead_fn on_dead, void *userdata);
/* Writes whatever nghttp2 wants to send now; call after submitting frames or resuming data.
 * Errors mark the connection dead (reported through on_dead) and are returned. */
int grpc_conn_flush(struct grpc_conn *c);
/* Reads and handles everything the peer has sent so far (up to EAGAIN), then flushes what
 * that queued: a graceful stop takes in the requests already on the wire before it ends
 * anything. Returns -ECONNRESET when the connection is (or became) dead. */
int grpc_conn_read_now(struct grpc_conn *c);
/* Marks dead and schedules on_dead. */
void grpc_conn_kill(struct grpc_conn *c);
void grpc_conn_done(struct grpc_conn *c);

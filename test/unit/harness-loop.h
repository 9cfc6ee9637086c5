/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the integration harnesses (test/deviceplugin/dp-harness.c, test/dra/dra-harness.c):
 * the process around the plugin under test, as the Python drivers expect it. Debug logging to
 * stderr, SIGTERM/SIGINT and stdin (the driver's pipe) handled in the sd-event loop, "ready" on
 * stdout once serving. Header-only like kube-fake.h. */
#pragma once

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "util/log.h"

/* A new loop in *ret: SIGTERM and SIGINT blocked and delivered to on_stop, stdin readable to
 * on_stdin, both with userdata. 0 or negative errno. */
static inline int harness_event_new(sd_event_signal_handler_t on_stop,
                                    sd_event_io_handler_t on_stdin, void *userdata, sd_event **ret)
{
        log_setup(LOG_TARGET_STDERR, LOG_DEBUG);
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        int r = sd_event_new(ret);
        if (r < 0)
                return r;
        (void)sd_event_add_signal(*ret, NULL, SIGTERM, on_stop, userdata);
        (void)sd_event_add_signal(*ret, NULL, SIGINT, on_stop, userdata);
        (void)sd_event_add_io(*ret, NULL, STDIN_FILENO, EPOLLIN, on_stdin, userdata);
        return 0;
}

/* Says "ready" (what the drivers wait for) and runs the loop until sd_event_exit(). */
static inline int harness_run(sd_event *event)
{
        printf("ready\n");
        fflush(stdout);
        return sd_event_loop(event);
}

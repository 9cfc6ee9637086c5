/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in for systemd-logind (and optionally systemd's manager) on a private D-Bus bus, for
 * the tests of `--stop-mode auto`. It serves the parts of the real interfaces the agent reads:
 *
 *   org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager
 *     property PreparingForShutdown "b" (as logind: no PropertiesChanged for it)
 *     property ScheduledShutdown "(st)"
 *     signal   PrepareForShutdown "b" (start)
 *   org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager
 *     property SystemState "s" (only with --systemd STATE)
 *
 * Usage: fake-logind --address unix:path=SOCK [--no-logind] [--systemd STATE]
 * Commands on stdin, one per line:
 *   shutdown         PreparingForShutdown true, PrepareForShutdown(true) sent (what logind
 *                    does when a poweroff is asked for and it waits for delay inhibitors)
 *   cancel           PreparingForShutdown false, PrepareForShutdown(false)
 *   state STATE      systemd's SystemState (e.g. running, stopping)
 *   hang             stop answering anything on the bus (a hung daemon)
 * Events on stdout, one JSON object a line: {"event":"ready"} once the names are owned,
 * {"event":"get","property":P} for every property read, {"event":"done","command":C}. Exits
 * when stdin closes. */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

static bool preparing;
static char system_state[32] = "running";

static int get_preparing(sd_bus *bus, const char *path, const char *interface, const char *property,
                         sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
        (void)bus, (void)path, (void)interface, (void)userdata, (void)error;
        printf("{\"event\":\"get\",\"property\":\"%s\",\"value\":%s}\n", property,
               preparing ? "true" : "false");
        return sd_bus_message_append(reply, "b", preparing);
}

static int get_scheduled(sd_bus *bus, const char *path, const char *interface, const char *property,
                         sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
        (void)bus, (void)path, (void)interface, (void)userdata, (void)error;
        printf("{\"event\":\"get\",\"property\":\"%s\"}\n", property);
        /* logind: ("poweroff", usec) while a shutdown is scheduled, ("", 0) otherwise. */
        return sd_bus_message_append(reply, "(st)", preparing ? "poweroff" : "", (uint64_t)0);
}

static int get_system_state(sd_bus *bus, const char *path, const char *interface,
                            const char *property, sd_bus_message *reply, void *userdata,
                            sd_bus_error *error)
{
        (void)bus, (void)path, (void)interface, (void)userdata, (void)error;
        printf("{\"event\":\"get\",\"property\":\"%s\",\"value\":\"%s\"}\n", property,
               system_state);
        return sd_bus_message_append(reply, "s", system_state);
}

static const sd_bus_vtable login1_manager[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("PreparingForShutdown", "b", get_preparing, 0, 0),
        SD_BUS_PROPERTY("ScheduledShutdown", "(st)", get_scheduled, 0, 0),
        SD_BUS_SIGNAL("PrepareForShutdown", "b", 0),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable systemd1_manager[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("SystemState", "s", get_system_state, 0, 0),
        SD_BUS_VTABLE_END,
};

static int command(sd_bus *bus, char *line, bool *hung)
{
        line[strcspn(line, "\r\n")] = '\0';
        if (strcmp(line, "shutdown") == 0 || strcmp(line, "cancel") == 0) {
                preparing = strcmp(line, "shutdown") == 0;
                int r = sd_bus_emit_signal(bus, "/org/freedesktop/login1",
                                           "org.freedesktop.login1.Manager", "PrepareForShutdown",
                                           "b", preparing);
                if (r < 0) {
                        fprintf(stderr, "fake-logind: PrepareForShutdown(%d): %s\n", preparing,
                                strerror(-r));
                        return r;
                }
        } else if (strncmp(line, "state ", 6) == 0 && strlen(line + 6) < sizeof(system_state)) {
                strcpy(system_state, line + 6);
        } else if (strcmp(line, "hang") == 0) {
                *hung = true;
        } else {
                fprintf(stderr, "fake-logind: unknown command '%s'\n", line);
                return -EINVAL;
        }
        printf("{\"event\":\"done\",\"command\":\"%s\"}\n", line);
        return 0;
}

int main(int argc, char **argv)
{
        const char *address = NULL, *systemd_state = NULL;
        bool logind = true;
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--address") == 0 && i + 1 < argc)
                        address = argv[++i];
                else if (strcmp(argv[i], "--systemd") == 0 && i + 1 < argc)
                        systemd_state = argv[++i];
                else if (strcmp(argv[i], "--no-logind") == 0)
                        logind = false;
                else {
                        fprintf(stderr, "usage: fake-logind --address ADDR [--no-logind] "
                                        "[--systemd STATE]\n");
                        return 2;
                }
        }
        if (!address) {
                fprintf(stderr, "fake-logind: --address is required\n");
                return 2;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        /* Unbuffered: a line read leaves the next ones in the pipe, where poll() sees them. */
        setvbuf(stdin, NULL, _IONBF, 0);

        sd_bus *bus = NULL;
        int r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_address(bus, address);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0) {
                fprintf(stderr, "fake-logind: connecting to %s: %s\n", address, strerror(-r));
                return 1;
        }
        if (logind) {
                r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/login1",
                                             "org.freedesktop.login1.Manager", login1_manager,
                                             NULL);
                if (r >= 0)
                        r = sd_bus_request_name(bus, "org.freedesktop.login1", 0);
                if (r < 0) {
                        fprintf(stderr, "fake-logind: serving org.freedesktop.login1: %s\n",
                                strerror(-r));
                        return 1;
                }
        }
        if (systemd_state) {
                snprintf(system_state, sizeof(system_state), "%s", systemd_state);
                r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/systemd1",
                                             "org.freedesktop.systemd1.Manager", systemd1_manager,
                                             NULL);
                if (r >= 0)
                        r = sd_bus_request_name(bus, "org.freedesktop.systemd1", 0);
                if (r < 0) {
                        fprintf(stderr, "fake-logind: serving org.freedesktop.systemd1: %s\n",
                                strerror(-r));
                        return 1;
                }
        }
        printf("{\"event\":\"ready\"}\n");

        bool hung = false;
        char line[256];
        for (;;) {
                /* A hung daemon: the bus is no longer read, calls queue up unanswered. */
                while (!hung && (r = sd_bus_process(bus, NULL)) > 0)
                        ;
                if (r < 0) {
                        fprintf(stderr, "fake-logind: processing the bus: %s\n", strerror(-r));
                        return 1;
                }
                struct pollfd fds[2] = {
                        { .fd = STDIN_FILENO, .events = POLLIN },
                        { .fd = sd_bus_get_fd(bus), .events = (short)sd_bus_get_events(bus) },
                };
                if (poll(fds, hung ? 1 : 2, -1) < 0 && errno != EINTR)
                        return 1;
                if (fds[0].revents) {
                        if (!fgets(line, sizeof(line), stdin))
                                break;
                        if (command(bus, line, &hung) < 0)
                                return 1;
                        (void)sd_bus_flush(bus);
                }
        }
        sd_bus_flush_close_unref(bus);
        return 0;
}

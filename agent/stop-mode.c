/* SPDX-License-Identifier: Apache-2.0 */
#include "stop-mode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "util/macro.h"

int stop_mode_from_string(const char *s, enum stop_mode *ret)
{
        static const char *const names[] = {
                [STOP_MODE_AUTO] = "auto",
                [STOP_MODE_RESTART] = "restart",
                [STOP_MODE_SHUTDOWN] = "shutdown",
        };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (s && strcmp(s, names[i]) == 0) {
                        *ret = (enum stop_mode)i;
                        return 0;
                }
        return -EINVAL;
}

const char *stop_mode_to_string(enum stop_mode m)
{
        switch (m) {
        case STOP_MODE_RESTART:
                return "restart";
        case STOP_MODE_SHUTDOWN:
                return "shutdown";
        case STOP_MODE_AUTO:
        default:
                return "auto";
        }
}

int node_shutting_down(unsigned long long timeout_usec, const char **why)
{
        sd_bus *bus = NULL;
        int answered = 0, shutting_down = 0;

        *why = "no system bus";
        int r = sd_bus_open_system(&bus);
        if (r < 0)
                return r;
        /* Both questions share the bound: a SIGTERM must not wait on a hung bus. */
        (void)sd_bus_set_method_call_timeout(bus, timeout_usec / 2 ? timeout_usec / 2 : 1);

        char *state = NULL;
        r = sd_bus_get_property_string(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                       "org.freedesktop.systemd1.Manager", "SystemState", NULL,
                                       &state);
        if (r >= 0) {
                answered = 1;
                *why = "systemd is running";
                if (strcmp(state, "stopping") == 0) {
                        shutting_down = 1;
                        *why = "systemd is stopping the system";
                }
                free(state);
        }
        if (!shutting_down) {
                int preparing = 0;
                sd_bus_error error = SD_BUS_ERROR_NULL;
                r = sd_bus_get_property_trivial(bus, "org.freedesktop.login1",
                                                "/org/freedesktop/login1",
                                                "org.freedesktop.login1.Manager",
                                                "PreparingForShutdown", &error, 'b', &preparing);
                sd_bus_error_free(&error);
                if (r >= 0) {
                        answered = 1;
                        if (preparing) {
                                shutting_down = 1;
                                *why = "logind is preparing for shutdown";
                        }
                }
        }
        sd_bus_flush_close_unref(bus);
        if (!answered) {
                *why = "neither systemd nor logind answered";
                return r < 0 ? r : -ENOENT;
        }
        return shutting_down;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* What a SIGTERM means: the node going down, or only the agent being restarted or upgraded.
 *
 * The kubelet marks a plugin's devices unhealthy itself the moment its connection ends, and a
 * new agent registers within its own start; reporting every device Unhealthy first only widens
 * the window in which the kubelet rejects pods (UnexpectedAdmissionError) during a restart. On
 * a node shutdown it is what keeps the kubelet from placing pods meanwhile. */
#pragma once

enum stop_mode {
        STOP_MODE_AUTO = 0, /* ask systemd and logind (below); a restart when neither answers */
        STOP_MODE_RESTART,  /* devices stay Healthy until the sockets close */
        STOP_MODE_SHUTDOWN, /* every device Unhealthy first */
};

/* "auto", "restart", "shutdown"; 0 or -EINVAL. */
int stop_mode_from_string(const char *s, enum stop_mode *ret);
const char *stop_mode_to_string(enum stop_mode m);

/* Whether the node is shutting down, on the system bus (bounded by timeout_usec in all):
 * systemd's Manager.SystemState is "stopping" (the host unit is stopped by the shutdown itself),
 * or logind's Manager.PreparingForShutdown is true (a shutdown announced through logind, such
 * as the kubelet's graceful node shutdown waits on while it terminates pods). 1 shutting down,
 * 0 not, negative errno when neither could be asked (no system bus: a container without
 * /run/dbus); *why says what answered. */
int node_shutting_down(unsigned long long timeout_usec, const char **why);

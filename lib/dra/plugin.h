/* SPDX-License-Identifier: Apache-2.0 */
/* The node side of a Dynamic Resource Allocation driver, as the kubelet's plugin watcher sees it.
 *
 * Two sockets on the caller's sd-event loop (lib/grpc, no threads):
 *  - <kubelet_root>/plugins_registry/<driver>-reg.sock serves pluginregistration.Registration:
 *    GetInfo answers type "DRAPlugin", the driver name, the endpoint below and the versions
 *    "v1.DRAPlugin" and "v1beta1.DRAPlugin"; NotifyRegistrationStatus tells whether the kubelet
 *    took us.
 *  - <kubelet_root>/plugins/<driver>/dra.sock serves the DRAPlugin service of both versions
 *    (k8s.io.kubelet.pkg.apis.dra.v1 and .v1beta1): NodePrepareResources and
 *    NodeUnprepareResources, answered claim by claim through the owner's handlers; a claim's
 *    failure is an error string in its own entry of the response, never a failed call.
 * The kubelet registers plugins itself when it starts (it scans plugins_registry); a socket
 * removed under us (a kubelet wiping its directories on restart, an operator) is served anew
 * on the next check: inotify on plugins_registry and a 5 s timer. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "util/macro.h"

/* upstream dra-driver-sriov's name, so that its DeviceClasses and claims select us */
#define DRA_DRIVER_NAME_DEFAULT  "sriovnetwork.k8snetworkplumbingwg.io"
#define DRA_KUBELET_ROOT_DEFAULT "/var/lib/kubelet"

struct dra_plugin;

struct dra_claim {
        const char *namespace_, *uid, *name;
};

/* One allocated device as the kubelet wants it back; every string is malloc'd. */
struct dra_prepared_device {
        char **request_names;
        size_t n_request_names;
        char *pool, *device;
        char **cdi_ids;
        size_t n_cdi_ids;
};

/* What the owner answers for one claim: devices, or error (malloc'd) when it failed. */
struct dra_claim_result {
        struct dra_prepared_device *devices;
        size_t n_devices;
        char *error;
};
void dra_claim_result_done(struct dra_claim_result *r);

/* One NodePrepareResources call, answered when the owner is done with it (reading the claims
 * from the API server takes a round trip): fill every claim's result, then call
 * dra_prepare_done(), at once or later from the event loop. If the kubelet went away
 * meanwhile the answer is dropped; the request stays valid until dra_prepare_done(). */
struct dra_prepare;
size_t dra_prepare_n_claims(const struct dra_prepare *req);
const struct dra_claim *dra_prepare_claim(const struct dra_prepare *req, size_t i);
struct dra_claim_result *dra_prepare_result(struct dra_prepare *req, size_t i);
void dra_prepare_done(struct dra_prepare *req);

struct dra_handlers {
        /* Starts answering req (results zeroed on entry); see dra_prepare_done(). */
        void (*prepare)(void *userdata, struct dra_prepare *req);
        /* Returns NULL or a malloc'd error. Unpreparing what was never prepared is success. */
        char *(*unprepare)(void *userdata, const struct dra_claim *claim);
        /* May be NULL. Every NotifyRegistrationStatus (registered true or false: a kubelet that
         * restarts registers the driver again, and wiped the node's ResourceSlices when it
         * started), and registered false when a removed registration socket is served anew
         * (the kubelet has to find it again). */
        void (*registration)(void *userdata, bool registered);
};

struct dra_plugin_options {
        const char *kubelet_root; /* default DRA_KUBELET_ROOT_DEFAULT; must outlive the plugin */
        const char *driver_name;  /* default DRA_DRIVER_NAME_DEFAULT; must outlive the plugin */
        const struct dra_handlers *handlers; /* must outlive the plugin */
        void *userdata;
};

int dra_plugin_new(sd_event *event, const struct dra_plugin_options *opts, struct dra_plugin **ret);
/* Serves a removed socket anew. Returns true when it did. */
bool dra_plugin_check(struct dra_plugin *p);
typedef void (*dra_plugin_drained_fn)(struct dra_plugin *p, void *userdata);
/* A graceful stop: removes the registration socket (answering what the plugin watcher already
 * asked), reads every call already sent on the service's connections (prepares are answered
 * when their claims are read), ends the health streams, sends GOAWAY and serves until the
 * kubelet closes the connections or grace_usec passed; done then runs (possibly at once) and
 * may free the plugin. */
void dra_plugin_drain(struct dra_plugin *p, uint64_t grace_usec, dra_plugin_drained_fn done,
                      void *userdata);
/* Stops serving and removes both sockets. NULL-safe; returns NULL. */
struct dra_plugin *dra_plugin_free(struct dra_plugin *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct dra_plugin *, dra_plugin_free);

/* Device health for the kubelet's DRAResourceHealth stream, served under every name a kubelet
 * calls (v1alpha1: kubelets 1.34 and 1.35; v1beta1: 1.36; v1: later): the whole list,
 * sent to every NodeWatchResources stream when it differs from the last one, and again every
 * DRA_HEALTH_RESEND_USEC (each report is valid for DRA_HEALTH_TIMEOUT_S, after which the
 * kubelet would call the device's health unknown). Strings are copied. 0 or -ENOMEM. */
#define DRA_HEALTH_TIMEOUT_S   60
#define DRA_HEALTH_RESEND_USEC (20 * 1000000ULL)
struct dra_device_health {
        const char *device;
        bool healthy;
        const char *message; /* may be NULL */
};
int dra_plugin_set_health(struct dra_plugin *p, const char *pool,
                          const struct dra_device_health *devs, size_t n);
size_t dra_plugin_n_health_watchers(const struct dra_plugin *p);

/* Whether the kubelet's last NotifyRegistrationStatus accepted us. */
bool dra_plugin_is_registered(const struct dra_plugin *p);
const char *dra_plugin_endpoint(const struct dra_plugin *p);
const char *dra_plugin_registration_socket(const struct dra_plugin *p);

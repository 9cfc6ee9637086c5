/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the plugin manager and plugins (lib/deviceplugin/{manager,plugin}.c) against an
 * in-process Registration server on one sd-event loop: registration contents, the unary RPCs,
 * re-registration after the socket is deleted and after a new kubelet.sock, pool removal and
 * shutdown cleaning up sockets. (The grpc-go peer is in the integration test.) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <fcntl.h>
#include <systemd/sd-event.h>

#include "deviceplugin.pb-c.h"
#include "deviceplugin/manager.h"
#include "dp-fixture.h"
#include "grpc/grpc-client.h"
#include "grpc/grpc-server.h"

struct kubelet {
        char dir[64], sock[128], devinfo[128];
        sd_event *event;
        struct grpc_server *server;
        int n_registered, want_registrations;
        char last_resource[128], last_endpoint[128], last_version[32];
        bool last_preferred;
        struct dp_manager *m; /* for all_registered() */
        /* client result */
        bool done;
        struct grpc_status st;
        uint8_t *resp;
        size_t resp_len;
};

static int on_register(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                       size_t *ret_len, struct grpc_status *st)
{
        struct kubelet *k = userdata;
        V1beta1__RegisterRequest *r = v1beta1__register_request__unpack(NULL, len, req);
        if (!r)
                return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT, "bad request");
        k->n_registered++;
        snprintf(k->last_resource, sizeof(k->last_resource), "%s", r->resource_name);
        snprintf(k->last_endpoint, sizeof(k->last_endpoint), "%s", r->endpoint);
        snprintf(k->last_version, sizeof(k->last_version), "%s", r->version);
        k->last_preferred = r->options && r->options->get_preferred_allocation_available;
        v1beta1__register_request__free_unpacked(r, NULL);
        *ret = NULL;
        *ret_len = 0;
        return GRPC_STATUS_OK;
}

static const struct grpc_method registration[] = {
        { .path = "/v1beta1.Registration/Register", .unary = on_register },
};

static void kubelet_start(struct kubelet *k)
{
        assert_int_equal(grpc_server_new(k->event, k->sock, registration, 1, k, &k->server), 0);
}

static uint64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A hang deadline, not a speed target: in wall-clock time (a count of loop turns would end
 * sooner the busier the loop), and generous, as inotify and the answers over the sockets are
 * several times slower under ASan or valgrind on a loaded machine. */
#define WAIT_MS 20000

static void run_until(struct kubelet *k, bool (*pred)(struct kubelet *k), int max_ms)
{
        const uint64_t deadline = now_ms() + (uint64_t)max_ms;
        while (!pred(k) && now_ms() < deadline)
                assert_true(sd_event_run(k->event, 10000) >= 0);
        assert_true(pred(k));
}

static bool all_registered(struct kubelet *k)
{
        return dp_manager_all_registered(k->m);
}

static bool kubelet_dir_exists(struct kubelet *k)
{
        return access(k->dir, F_OK) == 0;
}

static bool registered_enough(struct kubelet *k)
{
        return k->n_registered >= k->want_registrations;
}

static bool call_done(struct kubelet *k)
{
        return k->done;
}

static void on_done(void *userdata, const struct grpc_status *st, const uint8_t *resp, size_t len)
{
        struct kubelet *k = userdata;
        k->done = true;
        k->st = *st;
        free(k->resp);
        k->resp = len ? malloc(len) : NULL;
        if (len)
                memcpy(k->resp, resp, len);
        k->resp_len = len;
}

static void call(struct kubelet *k, const char *sock, const char *method,
                 const ProtobufCMessage *msg)
{
        uint8_t buf[4096];
        size_t len = protobuf_c_message_pack(msg, buf);
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", k->dir, sock);
        k->done = false;
        assert_int_equal(
            grpc_unary_call(k->event, path, method, buf, len, 10000000, on_done, k, NULL), 0);
        run_until(k, call_done, WAIT_MS);
}

static void make_pools(struct dp_pool_set *s, int n_vfs)
{
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", n_vfs, 0);
        fx_add_pf(&inv, 0x5e, "ens2f0", "vfio-pci", 2, 1);
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "net", DEVICE_TYPE_NETDEVICE, 0, 3);
        fx_add_group(&d, "0000:5e:00.0", "dpdk", DEVICE_TYPE_VFIO_PCI, 0, 1);
        assert_int_equal(dp_pools_from_desired(&d, &inv, NULL, s), 0);
        desired_state_done(&d);
        inventory_done(&inv);
}

static void test_manager_lifecycle(void **state)
{
        struct kubelet k = { 0 };
        strcpy(k.dir, "/tmp/test-dpm-XXXXXX");
        assert_non_null(mkdtemp(k.dir));
        snprintf(k.sock, sizeof(k.sock), "%s/kubelet.sock", k.dir);
        strcpy(k.devinfo, "/tmp/test-dpm-devinfo-XXXXXX");
        assert_non_null(mkdtemp(k.devinfo));
        assert_int_equal(sd_event_new(&k.event), 0);

        /* The plugins start before the kubelet: they retry, and register once it is there. */
        struct dp_manager *m;
        struct dp_manager_options o = { .kubelet_dir = k.dir, .devinfo_dir = k.devinfo };
        assert_int_equal(dp_manager_new(k.event, &o, &m), 0);
        struct dp_pool_set pools = { 0 };
        make_pools(&pools, 4);
        assert_int_equal(dp_manager_set_pools(m, &pools), 0);
        assert_int_equal(dp_manager_n_plugins(m), 2);
        for (int i = 0; i < 20; i++)
                assert_true(sd_event_run(k.event, 10000) >= 0);
        assert_false(dp_manager_all_registered(m));
        kubelet_start(&k);
        k.want_registrations = 2;
        run_until(&k, registered_enough, WAIT_MS); /* inotify sees kubelet.sock */
        k.m = m;
        run_until(&k, all_registered, WAIT_MS); /* the answers travel back */
        assert_string_equal(k.last_version, "v1beta1");
        assert_true(k.last_preferred);
        assert_true(strcmp(k.last_endpoint, "openshift.io_net.sock") == 0 ||
                    strcmp(k.last_endpoint, "openshift.io_dpdk.sock") == 0);

        /* Unary RPCs on the plugin socket. */
        V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
        call(&k, "openshift.io_net.sock", "/v1beta1.DevicePlugin/GetDevicePluginOptions",
             &empty.base);
        assert_int_equal(k.st.code, GRPC_STATUS_OK);
        V1beta1__DevicePluginOptions *opts =
            v1beta1__device_plugin_options__unpack(NULL, k.resp_len, k.resp);
        assert_non_null(opts);
        assert_true(opts->get_preferred_allocation_available);
        assert_false(opts->pre_start_required);
        v1beta1__device_plugin_options__free_unpacked(opts, NULL);

        char *ids[] = { "0000:5e:01.1" };
        V1beta1__ContainerAllocateRequest creq = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
        creq.n_devices_ids = 1;
        creq.devices_ids = ids;
        V1beta1__ContainerAllocateRequest *creqs[] = { &creq, &creq };
        V1beta1__AllocateRequest areq = V1BETA1__ALLOCATE_REQUEST__INIT;
        areq.n_container_requests = 2;
        areq.container_requests = creqs;
        call(&k, "openshift.io_dpdk.sock", "/v1beta1.DevicePlugin/Allocate", &areq.base);
        assert_int_equal(k.st.code, GRPC_STATUS_OK);
        V1beta1__AllocateResponse *aresp =
            v1beta1__allocate_response__unpack(NULL, k.resp_len, k.resp);
        assert_non_null(aresp);
        assert_int_equal(aresp->n_container_responses, 2);
        assert_int_equal(aresp->container_responses[1]->n_envs, 2);
        assert_int_equal(aresp->container_responses[1]->n_devices, 2);
        assert_string_equal(aresp->container_responses[1]->devices[0]->host_path, "/dev/vfio/vfio");
        v1beta1__allocate_response__free_unpacked(aresp, NULL);
        char info[256];
        snprintf(info, sizeof(info), "%s/openshift.io-dpdk-0000:5e:01.1-device.json", k.devinfo);
        assert_int_equal(access(info, F_OK), 0);

        call(&k, "openshift.io_dpdk.sock", "/v1beta1.DevicePlugin/Allocate",
             &empty.base); /* an empty AllocateRequest is valid protobuf: no containers */
        assert_int_equal(k.st.code, GRPC_STATUS_OK);
        ids[0] = "0000:5e:01.7";
        call(&k, "openshift.io_dpdk.sock", "/v1beta1.DevicePlugin/Allocate", &areq.base);
        assert_int_equal(k.st.code, GRPC_STATUS_INVALID_ARGUMENT);

        char *avail[] = { "0000:3b:01.0", "0000:3b:01.1", "0000:3b:01.2" };
        V1beta1__ContainerPreferredAllocationRequest preq =
            V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
        preq.n_available_deviceids = 3;
        preq.available_deviceids = avail;
        preq.allocation_size = 2;
        V1beta1__ContainerPreferredAllocationRequest *preqs[] = { &preq };
        V1beta1__PreferredAllocationRequest pr = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
        pr.n_container_requests = 1;
        pr.container_requests = preqs;
        call(&k, "openshift.io_net.sock", "/v1beta1.DevicePlugin/GetPreferredAllocation", &pr.base);
        assert_int_equal(k.st.code, GRPC_STATUS_OK);
        V1beta1__PreferredAllocationResponse *presp =
            v1beta1__preferred_allocation_response__unpack(NULL, k.resp_len, k.resp);
        assert_int_equal(presp->container_responses[0]->n_deviceids, 2);
        v1beta1__preferred_allocation_response__free_unpacked(presp, NULL);
        preq.allocation_size = -1;
        call(&k, "openshift.io_net.sock", "/v1beta1.DevicePlugin/GetPreferredAllocation", &pr.base);
        assert_int_equal(k.st.code, GRPC_STATUS_INVALID_ARGUMENT);

        /* Bytes that are no AllocateRequest: INVALID_ARGUMENT, and the plugin goes on. */
        {
                const uint8_t junk[] = { 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01 };
                char path[256];
                snprintf(path, sizeof(path), "%s/openshift.io_dpdk.sock", k.dir);
                k.done = false;
                assert_int_equal(grpc_unary_call(k.event, path, "/v1beta1.DevicePlugin/Allocate",
                                                 junk, sizeof(junk), 10000000, on_done, &k, NULL),
                                 0);
                run_until(&k, call_done, WAIT_MS);
                assert_int_equal(k.st.code, GRPC_STATUS_INVALID_ARGUMENT);
        }

        V1beta1__PreStartContainerRequest ps = V1BETA1__PRE_START_CONTAINER_REQUEST__INIT;
        call(&k, "openshift.io_net.sock", "/v1beta1.DevicePlugin/PreStartContainer", &ps.base);
        assert_int_equal(k.st.code, GRPC_STATUS_OK);

        /* Our socket deleted (kubelet restart): served anew and registered again. */
        char net_sock[192];
        snprintf(net_sock, sizeof(net_sock), "%s/openshift.io_net.sock", k.dir);
        assert_int_equal(unlink(net_sock), 0);
        k.want_registrations = k.n_registered + 1;
        run_until(&k, registered_enough, WAIT_MS);
        assert_int_equal(access(net_sock, F_OK), 0);
        assert_string_equal(k.last_resource, "openshift.io/net");

        /* A new kubelet.sock: everybody registers again. */
        k.server = grpc_server_free(k.server);
        kubelet_start(&k);
        k.want_registrations = k.n_registered + 2;
        run_until(&k, registered_enough, WAIT_MS);

        /* The whole directory replaced (kubelet reinstalled): sockets come back, and the
         * plugins register with the kubelet that appears in the new directory. */
        k.server = grpc_server_free(k.server);
        char cmd[160];
        snprintf(cmd, sizeof(cmd), "%s/openshift.io_dpdk.sock", k.dir);
        unlink(cmd);
        unlink(net_sock);
        unlink(k.sock);
        assert_int_equal(rmdir(k.dir), 0);
        run_until(&k, kubelet_dir_exists, WAIT_MS); /* recreated by the manager */
        kubelet_start(&k);
        k.want_registrations = k.n_registered + 2;
        run_until(&k, registered_enough, WAIT_MS);
        assert_int_equal(access(net_sock, F_OK), 0);
        assert_int_equal(access(cmd, F_OK), 0);

        /* The vfio resource goes away: its socket and device-info files go with it. */
        dp_pool_set_done(&pools);
        make_pools(&pools, 4);
        dp_pool_done(&pools.pools[1]);
        pools.n_pools = 1;
        assert_string_equal(pools.pools[0].resource, "openshift.io/net");
        assert_int_equal(dp_manager_set_pools(m, &pools), 0);
        assert_int_equal(dp_manager_n_plugins(m), 1);
        char dpdk_sock[192];
        snprintf(dpdk_sock, sizeof(dpdk_sock), "%s/openshift.io_dpdk.sock", k.dir);
        assert_int_equal(access(dpdk_sock, F_OK), -1);
        assert_int_equal(access(info, F_OK), -1);

        /* Shutdown removes the remaining socket; the kubelet's stays. */
        dp_manager_shutdown(m);
        assert_int_equal(access(net_sock, F_OK), -1);
        assert_int_equal(access(k.sock, F_OK), 0);
        dp_manager_free(m);
        dp_pool_set_done(&pools);
        grpc_server_free(k.server);
        free(k.resp);
        sd_event_unref(k.event);
        rmdir(k.devinfo);
        rmdir(k.dir);
}

/* Issue 15.10: an error is printed once, with its own errno text: no "%m" expanding a stale or
 * doubled errno ("No such file or directory: Address already in use"). */
static void test_error_text_once(void **state)
{
        char dir[] = "/tmp/test-dpm-err-XXXXXX", log[64];
        assert_non_null(mkdtemp(dir));
        snprintf(log, sizeof(log), "%s/stderr", dir);
        sd_event *e;
        assert_int_equal(sd_event_new(&e), 0);
        struct dp_pool_set pools = { 0 };
        make_pools(&pools, 1);
        char gone[128];
        snprintf(gone, sizeof(gone), "%s/absent", dir); /* no such directory: bind fails */
        fflush(stderr);
        int saved = dup(2);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0 && saved >= 0);
        dup2(fd, 2);
        errno = EADDRINUSE; /* a stale errno a "%m" would print */
        struct dp_plugin *p = NULL;
        struct dp_plugin_options o = { .kubelet_dir = gone, .devinfo_dir = dir };
        int r = dp_plugin_new(e, &o, &pools.pools[0], &p);
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        close(fd);
        assert_int_equal(r, -ENOENT);
        char text[4096] = "";
        FILE *f = fopen(log, "r");
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[n] = 0;
        print_message("logged: %s", text);
        const char *enoent = strerror(ENOENT);
        const char *first = strstr(text, enoent);
        assert_non_null(first);
        assert_null(strstr(first + 1, enoent)); /* once */
        assert_null(strstr(text, strerror(EADDRINUSE)));
        assert_non_null(strstr(text, "cannot serve on"));
        dp_pool_set_done(&pools);
        sd_event_unref(e);
        unlink(log);
        rmdir(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_manager_lifecycle),
                cmocka_unit_test(test_error_text_once),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

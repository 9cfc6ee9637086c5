/* SPDX-License-Identifier: Apache-2.0 */
/* bench-allocate: Allocate latency seen by a grpc-go client, and the plugin's memory.
 *
 *   bench-allocate [FAKE_KUBELET] [CALLS]
 *
 * Serves 4 pools × 128 devices (vfio-pci, RDMA netdevice, netdevice with vhost-net, netdevice;
 * synthetic, no sysfs) with the device-plugin manager in this process, starts the grpc-go fake
 * kubelet (default: fake-kubelet next to this program), waits until every pool is registered
 * and listed, then has it make CALLS (default 10,000) sequential Allocate calls of one device
 * each and report median and p99. RSS is this process's VmRSS/VmHWM afterwards (the whole
 * embedded plugin incl. libraries). Targets: p99 < 500 µs, RSS < 6 MB.
 *
 *   bench-allocate --serve KUBELET_DIR DEVINFO_DIR
 *
 * Only serves the same pools (registering with KUBELET_DIR/kubelet.sock) until SIGTERM, SIGINT
 * or EOF on stdin: bench/run drives it and bench/grpc-go-plugin with the same client. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <systemd/sd-event.h>

#include "deviceplugin/manager.h"
#include "deviceplugin/pool.h"
#include "util/log.h"
#include "util/macro.h"

#define N_POOLS   4
#define N_DEVICES 128

struct bench {
        sd_event *event;
        struct dp_manager *manager;
        FILE *to_kubelet;
        char buf[1 << 16];
        size_t len;
        int registered, listed;
        bool sent;
        long calls;
        json_t *result;
        double cpu_at_start; /* seconds of our CPU time when the calls began */
};

static double cpu_seconds(void)
{
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
               (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int build_pools(struct dp_pool_set *set)
{
        static const char *const names[N_POOLS] = { "bench_vfio", "bench_rdma", "bench_vhost",
                                                    "bench_net" };
        set->pools = calloc(N_POOLS, sizeof(*set->pools));
        if (!set->pools)
                return -ENOMEM;
        for (int i = 0; i < N_POOLS; i++) {
                struct dp_pool *p = &set->pools[i];
                set->n_pools++;
                *p = (struct dp_pool){ .kind = DP_POOL_SRIOV,
                                       .device_type =
                                           i == 0 ? DEVICE_TYPE_VFIO_PCI : DEVICE_TYPE_NETDEVICE,
                                       .is_rdma = i == 1,
                                       .need_vhost_net = i == 2 };
                dp_pool_set_names(p, "openshift.io", names[i]);
                p->devices = calloc(N_DEVICES, sizeof(*p->devices));
                if (!p->devices)
                        return -ENOMEM;
                for (int j = 0; j < N_DEVICES; j++) {
                        struct dp_device *d = &p->devices[j];
                        *d = (struct dp_device){ .healthy = true,
                                                 .numa_node = j % 2,
                                                 .iommu_group = 200 + i * N_DEVICES + j };
                        snprintf(d->id, sizeof(d->id), "0000:%02x:%02x.%d", 0x3b + i * 2 + j / 64,
                                 (j % 64) / 8, j % 8);
                        snprintf(d->pf, sizeof(d->pf), "0000:%02x:00.0", 0x3b + i * 2 + j / 64);
                        p->n_devices++;
                        if (p->is_rdma) {
                                char path[64];
                                snprintf(d->rdma_device, sizeof(d->rdma_device), "mlx5_%d", j);
                                d->rdma_cm = true; /* rdma_ucm loaded, as the grpc-go peer */
                                snprintf(path, sizeof(path), "/dev/infiniband/uverbs%d", j);
                                strv_push_dup(&d->char_devices, &d->n_char_devices, path);
                                snprintf(path, sizeof(path), "/dev/infiniband/umad%d", j);
                                strv_push_dup(&d->char_devices, &d->n_char_devices, path);
                        }
                }
        }
        return 0;
}

static void send_bench(struct bench *b)
{
        const struct dp_pool *p = dp_plugin_pool(dp_manager_plugin(b->manager, 0));
        json_t *ids = json_array();
        for (size_t i = 0; i < p->n_devices; i++)
                json_array_append_new(ids, json_string(p->devices[i].id));
        json_auto_t *cmd = json_pack("{s:s, s:s, s:I, s:o}", "cmd", "bench", "resource",
                                     p->resource, "n", (json_int_t)b->calls, "ids", ids);
        _cleanup_free_ char *s = json_dumps(cmd, JSON_COMPACT);
        fprintf(b->to_kubelet, "%s\n", s);
        fflush(b->to_kubelet);
        b->sent = true;
        b->cpu_at_start = cpu_seconds();
}

static void on_line(struct bench *b, const char *line)
{
        json_auto_t *ev = json_loads(line, 0, NULL);
        const char *kind = json_string_value(json_object_get(ev, "event"));
        if (kind && strcmp(kind, "register") == 0)
                b->registered++;
        else if (kind && strcmp(kind, "devices") == 0)
                b->listed++;
        else if (kind && strcmp(kind, "bench") == 0) {
                b->result = json_incref(ev);
                json_object_set_new(
                    b->result, "server_cpu_us",
                    json_real((cpu_seconds() - b->cpu_at_start) * 1e6 / (double)b->calls));
                sd_event_exit(b->event, 0);
        }
        if (!b->sent && b->registered >= N_POOLS && b->listed >= N_POOLS)
                send_bench(b);
}

static int on_output(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        struct bench *b = userdata;
        ssize_t n = read(fd, b->buf + b->len, sizeof(b->buf) - 1 - b->len);
        if (n <= 0) {
                fprintf(stderr, "bench-allocate: fake kubelet exited\n");
                return sd_event_exit(b->event, 1);
        }
        b->len += (size_t)n;
        b->buf[b->len] = 0;
        char *nl;
        while ((nl = strchr(b->buf, '\n'))) {
                *nl = 0;
                on_line(b, b->buf);
                size_t used = (size_t)(nl + 1 - b->buf);
                memmove(b->buf, nl + 1, b->len - used + 1);
                b->len -= used;
        }
        return 0;
}

static long status_kb(const char *field)
{
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        long v = -1;
        size_t n = strlen(field);
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, field, n) == 0)
                        v = strtol(line + n + 1, NULL, 10);
        if (f)
                fclose(f);
        return v;
}

static pid_t spawn(const char *prog, const char *dir, int *ret_in, int *ret_out)
{
        int in[2], out[2];
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
                return -1;
        pid_t pid = fork();
        if (pid == 0) {
                dup2(in[0], 0);
                dup2(out[1], 1);
                execl(prog, prog, "--dir", dir, (char *)NULL);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        *ret_in = in[1];
        *ret_out = out[0];
        return pid;
}

static int on_stdin(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        char buf[256];
        if (read(fd, buf, sizeof(buf)) <= 0)
                return sd_event_exit(sd_event_source_get_event(s), 0);
        return 0;
}

static int serve(const char *kdir, const char *devinfo)
{
        sd_event *event = NULL;
        struct dp_manager *manager = NULL;
        struct dp_pool_set pools = { 0 };
        const struct dp_manager_options opts = { .kubelet_dir = kdir, .devinfo_dir = devinfo };
        sigset_t mask;

        log_setup(LOG_TARGET_STDERR, LOG_WARNING);
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        int r = sd_event_default(&event);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_io(event, NULL, STDIN_FILENO, EPOLLIN, on_stdin, NULL);
        if (r >= 0)
                r = build_pools(&pools);
        if (r >= 0)
                r = dp_manager_new(event, &opts, &manager);
        if (r >= 0)
                r = dp_manager_set_pools(manager, &pools);
        dp_pool_set_done(&pools);
        if (r >= 0)
                r = sd_event_loop(event);
        if (r < 0)
                fprintf(stderr, "bench-allocate --serve: %s\n", strerror(-r));
        if (manager) {
                dp_manager_shutdown(manager);
                dp_manager_free(manager);
        }
        sd_event_unref(event);
        return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
        if (argc > 1 && strcmp(argv[1], "--serve") == 0) {
                if (argc != 4) {
                        fprintf(stderr, "usage: bench-allocate --serve KUBELET_DIR DEVINFO_DIR\n");
                        return 2;
                }
                return serve(argv[2], argv[3]);
        }
        char prog[PATH_MAX];
        if (argc > 1)
                snprintf(prog, sizeof(prog), "%s", argv[1]);
        else {
                char self[PATH_MAX];
                ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
                self[n > 0 ? n : 0] = 0;
                snprintf(prog, sizeof(prog), "%s/fake-kubelet", dirname(self));
        }
        long calls = 10000;
        if (argc > 2) {
                char *end;
                errno = 0;
                calls = strtol(argv[2], &end, 10);
                if (errno != 0 || end == argv[2] || *end != '\0' || calls <= 0) {
                        fprintf(stderr, "bench-allocate: CALLS must be a positive number\n");
                        return 2;
                }
        }
        struct bench b = { .calls = calls };
        if (access(prog, X_OK) < 0) {
                fprintf(stderr,
                        "bench-allocate: no fake kubelet at %s (build target fake-kubelet)\n",
                        prog);
                return 1;
        }
        /* tmpfs when there is one, as /var/run (the device-info root) is on a real node */
        char dir[64];
        snprintf(dir, sizeof(dir), "%s/bench-allocate-XXXXXX",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        if (!mkdtemp(dir))
                return 1;
        char kdir[96], devinfo[96];
        snprintf(kdir, sizeof(kdir), "%s/kubelet", dir);
        snprintf(devinfo, sizeof(devinfo), "%s/devinfo", dir);
        mkdir(kdir, 0755);
        log_setup(LOG_TARGET_STDERR, LOG_WARNING);

        int to, from;
        pid_t pid = spawn(prog, kdir, &to, &from);
        if (pid < 0)
                return 1;
        b.to_kubelet = fdopen(to, "w");
        sd_event_default(&b.event);
        struct dp_manager_options opts = { .kubelet_dir = kdir, .devinfo_dir = devinfo };
        struct dp_pool_set pools = { 0 };
        int r = build_pools(&pools);
        if (r >= 0)
                r = dp_manager_new(b.event, &opts, &b.manager);
        if (r >= 0)
                r = dp_manager_set_pools(b.manager, &pools);
        dp_pool_set_done(&pools);
        sd_event_add_io(b.event, NULL, from, EPOLLIN, on_output, &b);
        long rss_idle = -1;
        if (r >= 0)
                r = sd_event_loop(b.event);
        rss_idle = status_kb("VmRSS:");
        if (b.result) {
                json_int_t median = json_integer_value(json_object_get(b.result, "median_us"));
                json_int_t p99 = json_integer_value(json_object_get(b.result, "p99_us"));
                printf("bench-allocate: %ld Allocate calls from grpc-go, %d pools x %d devices\n",
                       b.calls, N_POOLS, N_DEVICES);
                printf("  median  %6lld us\n", (long long)median);
                printf("  p99     %6lld us   (target < 500 us)  %s\n", (long long)p99,
                       p99 < 500 ? "met" : "MISSED");
                printf("  plugin CPU per call %.0f us (user+system of this process)\n",
                       json_real_value(json_object_get(b.result, "server_cpu_us")));
                printf("  RSS     %6ld kB   (target < 6144 kB) %s   peak %ld kB\n", rss_idle,
                       rss_idle < 6144 ? "met" : "MISSED", status_kb("VmHWM:"));
        } else
                fprintf(stderr, "bench-allocate: no result (%s)\n",
                        r < 0 ? strerror(-r) : "fake kubelet failed");
        fprintf(b.to_kubelet, "{\"cmd\":\"quit\"}\n");
        fclose(b.to_kubelet);
        waitpid(pid, NULL, 0);
        dp_manager_shutdown(b.manager);
        dp_manager_free(b.manager);
        json_decref(b.result);
        sd_event_unref(b.event);
        rmdir(devinfo);
        rmdir(kdir);
        rmdir(dir);
        return b.result ? 0 : 1;
}

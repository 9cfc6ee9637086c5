/* SPDX-License-Identifier: Apache-2.0 */
/* Discovery benchmark: 8 PFs x 128 VFs.
 *
 *   bench-discover [SYSFS_ROOT...]
 *
 * Without arguments it generates two trees with test/sysfs-gen/gen-sysfs.py (found through
 * $SRCDIR, else relative to this program in <src>/build/): --scale 8x128:e810 (netdevs only)
 * and --scale 8x128:cx6 (an RDMA device with four char devices on every function, the worst
 * case), in /dev/shm when it exists (sysfs lives in memory too) else /tmp, and removes them
 * afterwards. Prints, per tree, the median wall time of host_discover() over the runs and the
 * CPU time, then the process's max RSS, beside the targets (<= 50 ms, <= 8 MB). Discovery runs
 * as the agent's reconcile runs it on a generated tree: no pci.ids names (only `discover`'s
 * text output asks for them, 5 ms more), no netlink/verbs queries.
 * Exit 1 when a target is missed. */
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-time.h"
#include "host/discover.h"
#include "util/log.h"

#define RUNS          21
#define TARGET_MS     50.0
#define TARGET_RSS_KB (8 * 1024)
#define SCALE         "8x128"

extern char **environ;

static int run(char *const argv[])
{
        pid_t pid;
        int status;
        if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0)
                return -1;
        if (waitpid(pid, &status, 0) < 0)
                return -1;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int find_generator(const char *argv0, char *buf, size_t size)
{
        const char *src = getenv("SRCDIR");
        char self[PATH_MAX];

        if (src) {
                if (snprintf(buf, size, "%s/test/sysfs-gen/gen-sysfs.py", src) >= (int)size)
                        return -1;
                return access(buf, R_OK);
        }
        if (!realpath(argv0, self))
                return -1;
        /* <src>/build/bench-discover or <src>/build/<sub>/bench-discover */
        for (int up = 0; up < 3; up++) {
                char *slash = strrchr(self, '/');
                if (!slash)
                        return -1;
                *slash = '\0';
                if (snprintf(buf, size, "%s/test/sysfs-gen/gen-sysfs.py", self) < (int)size &&
                    access(buf, R_OK) == 0)
                        return 0;
        }
        return -1;
}

struct result {
        size_t n_pfs, n_vfs, n_rdma;
        double median_ms, min_ms, max_ms, cpu_ms;
};

static double cpu_ms(void)
{
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
               (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static int bench_tree(const char *root, struct result *res)
{
        struct discover_options opts = { .sysfs_root = root };
        double ms[RUNS], cpu0 = 0;

        *res = (struct result){};
        for (int i = -1; i < RUNS; i++) { /* run -1 warms the caches */
                struct inventory inv;
                if (i == 0)
                        cpu0 = cpu_ms();
                double t0 = now_ms();
                if (host_discover(&opts, &inv) < 0)
                        return -1;
                if (i >= 0)
                        ms[i] = now_ms() - t0;
                if (i == 0)
                        for (size_t p = 0; p < inv.n_pfs; p++) {
                                res->n_pfs++;
                                res->n_vfs += inv.pfs[p].n_vfs;
                                res->n_rdma += inv.pfs[p].n_rdma;
                                for (size_t v = 0; v < inv.pfs[p].n_vfs; v++)
                                        res->n_rdma += inv.pfs[p].vfs[v].n_rdma;
                        }
                inventory_done(&inv);
        }
        res->cpu_ms = (cpu_ms() - cpu0) / RUNS;
        qsort(ms, RUNS, sizeof(ms[0]), compare_double);
        res->median_ms = ms[RUNS / 2];
        res->min_ms = ms[0];
        res->max_ms = ms[RUNS - 1];
        return 0;
}

static bool report(const char *label, const struct result *res)
{
        bool ok = res->median_ms <= TARGET_MS;
        printf("%-22s %zu PFs, %4zu VFs, %4zu RDMA devs: median %7.2f ms (min %.2f, max %.2f, "
               "cpu %.2f ms)  target <= %.0f ms  %s\n",
               label, res->n_pfs, res->n_vfs, res->n_rdma, res->median_ms, res->min_ms, res->max_ms,
               res->cpu_ms, TARGET_MS, ok ? "OK" : "MISSED");
        return ok;
}

int main(int argc, char **argv)
{
        static const char *const models[] = { "e810", "cx6" };
        char tmp[64], gen[PATH_MAX];
        bool all_ok = true;
        int rc = 0;

        log_setup(LOG_TARGET_STDERR, LOG_WARNING);
        printf("bench-discover: %d runs per tree after one warm-up\n", RUNS);
        if (argc > 1) {
                for (int i = 1; i < argc; i++) {
                        struct result res;
                        if (bench_tree(argv[i], &res) < 0)
                                return 2;
                        all_ok &= report(argv[i], &res);
                }
        } else {
                if (find_generator(argv[0], gen, sizeof(gen)) < 0) {
                        fprintf(stderr, "bench-discover: gen-sysfs.py not found; set SRCDIR\n");
                        return 2;
                }
                snprintf(tmp, sizeof(tmp), "%s/sriov-bench-discover-XXXXXX",
                         access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
                if (!mkdtemp(tmp))
                        return 2;
                for (size_t m = 0; m < sizeof(models) / sizeof(models[0]) && rc == 0; m++) {
                        char root[PATH_MAX], scale[32], label[64];
                        struct result res;

                        snprintf(scale, sizeof(scale), "%s:%s", SCALE, models[m]);
                        snprintf(label, sizeof(label), "%s (generated)", scale);
                        if (snprintf(root, sizeof(root), "%s/%s", tmp, models[m]) >=
                            (int)sizeof(root)) {
                                rc = 2;
                                break;
                        }
                        char *gen_argv[] = {
                                "python3", gen, "--out", root, "--scale", scale, NULL
                        };
                        if (run(gen_argv) < 0 || bench_tree(root, &res) < 0) {
                                fprintf(stderr, "bench-discover: %s failed\n", scale);
                                rc = 2;
                                break;
                        }
                        all_ok &= report(label, &res);
                }
                char *rm_argv[] = { "rm", "-rf", "--", tmp, NULL };
                run(rm_argv);
        }
        if (rc != 0)
                return rc;

        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        bool rss_ok = ru.ru_maxrss <= TARGET_RSS_KB;
        printf("%-22s %.2f MB                                                   target <= %d MB  "
               "%s\n",
               "max RSS", ru.ru_maxrss / 1024.0, TARGET_RSS_KB / 1024, rss_ok ? "OK" : "MISSED");
        return all_ok && rss_ok ? 0 : 1;
}

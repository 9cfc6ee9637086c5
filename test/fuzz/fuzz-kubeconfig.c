/* SPDX-License-Identifier: Apache-2.0 */
/* A kubeconfig file (YAML: current-context -> context -> cluster + user), loaded from disk as the
 * daemon does, then the bearer token asked for as before every request. */
#include <fcntl.h>
#include <unistd.h>

#include "fuzz-common.h"
#include "kube/kubeconfig.h"
#include "util/macro.h"

static char dir_path[64];
static char config_path[96];

static void cleanup(void)
{
        (void)unlink(config_path);
        (void)rmdir(dir_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (!dir_path[0]) {
                fuzz_mkdtemp(dir_path, sizeof(dir_path), "fuzz-kubeconfig");
                snprintf(config_path, sizeof(config_path), "%s/config", dir_path);
                atexit(cleanup);
        }
        {
                _cleanup_close_ int fd =
                    open(config_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                if (fd < 0 || write(fd, data, size) != (ssize_t)size)
                        abort();
        }
        struct kube_config *c = NULL;
        if (kube_config_load_file(config_path, &c) >= 0 && c) {
                const char *token;
                (void)kube_config_current_token(c, &token);
        }
        kube_config_free(c);
        return 0;
}

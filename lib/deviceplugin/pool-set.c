/* SPDX-License-Identifier: Apache-2.0 */
#include "deviceplugin/pool-set.h"

#include <errno.h>

#include "util/log.h"

int dp_pools_build(const struct desired_state *desired, const struct inventory *inv,
                   const char *prefix, const struct rdma_shared_config *rdma,
                   const struct dp_pool_set *previous, const struct dp_health_options *health,
                   struct dp_pool_set *ret)
{
        struct dp_pool_set all = { 0 }, shared = { 0 };
        int r = dp_pools_from_desired_health(desired, inv, prefix, previous, health, &all);
        if (r < 0)
                return r;
        if (rdma) {
                r = dp_pools_from_rdma_shared_health(rdma, inv, health, &shared);
                if (r >= 0) {
                        r = dp_pool_set_take(&all, &shared);
                        if (r == -EEXIST)
                                log_error("an RDMA shared resource has the same name as an SR-IOV "
                                          "resource; serving neither set");
                }
                dp_pool_set_done(&shared);
        }
        if (r < 0) {
                dp_pool_set_done(&all);
                return r;
        }
        *ret = all;
        return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Delegating to an IPAM plugin as the CNI spec says: the executable named by ipam.type,
 * searched in CNI_PATH, run with the same environment but CNI_COMMAND, and the same stdin. */
#pragma once

#include <stddef.h>

#include "cni/conf.h"

/* Runs plugin `type` for command ("ADD", "DEL", ...). On success *out (malloc'ed, NUL
 * terminated) holds its stdout. A plugin that exits non-zero fills e with its own message
 * ({"code","msg"} on its stdout) prefixed with the plugin's name, and returns -EIO; a plugin
 * not found in cni_path is -ENOENT with e naming the directories searched. The plugin gets
 * timeout_ms to finish (the caller holds a VF's lock meanwhile): then it is killed and the
 * answer is -ETIMEDOUT. Its stdin is written while its stdout is read, so no answer size
 * deadlocks the two. */
int cni_ipam_exec(const char *type, const char *command, const char *cni_path, const char *data,
                  size_t len, int timeout_ms, char **out, size_t *out_len, struct cni_error *e);

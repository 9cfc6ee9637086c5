/* SPDX-License-Identifier: Apache-2.0 */
/* Reading policies from the file system: a file, or every *.yaml / *.yml / *.json file of a
 * directory (in name order; dot-files are skipped, so editors' temporaries are not read).
 * Lives in agent/ so that lib/policy stays pure (no I/O); what it reads goes through
 * policy_list_add_buffer(). Errors name the path and are logged. */
#pragma once

#include "policy/policy.h"
#include "policy/supported-nics.h"

#define POLICY_FILE_MAX_SIZE (16 * 1024 * 1024)

/* 0, or a negative errno when a path cannot be read (the list keeps what was read before). */
int policy_list_load_path(struct policy_list *list, const char *path);

/* Adds the models of a supported-NIC file: YAML or JSON, either a mapping of model names to
 * "<vendor> <pf-device> <vf-device>" (a ConfigMap's data) or a whole ConfigMap object, such as
 * `kubectl get configmap supported-nic-ids -o yaml` prints. 0, or a negative errno (logged,
 * naming the file and key; nothing is added then). */
int supported_nics_load_file(struct supported_nics *s, const char *path);

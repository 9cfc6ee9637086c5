/* Reading policies from the file system: a file, or every *.yaml / *.yml / *.json file of a
 * directory (in name order; dot-files are skipped, so editors' temporaries are not read).
 * The only part of lib/policy that reads files; what it reads goes through
 * policy_list_add_buffer(). Errors name the path and are logged. */
#pragma once

#include "policy/policy.h"

#define POLICY_FILE_MAX_SIZE (16 * 1024 * 1024)

/* 0, or a negative errno when a path cannot be read (the list keeps what was read before). */
int policy_list_load_path(struct policy_list *list, const char *path);

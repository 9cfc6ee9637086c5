/* SPDX-License-Identifier: Apache-2.0 */
#include "policy-files.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/yaml-json.h"

static int load_file(struct policy_list *list, const char *path)
{
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r = read_full_file(path, POLICY_FILE_MAX_SIZE, &data, &size);

        if (r < 0)
                return log_error_errno(r, "cannot read policy file %s", path);
        r = policy_list_add_buffer(list, path, data, size);
        return r < 0 ? log_error_errno(r, "%s", path) : 0;
}

static bool is_policy_file_name(const char *name)
{
        static const char *const exts[] = { ".yaml", ".yml", ".json" };
        size_t len = strlen(name);

        if (name[0] == '.')
                return false;
        for (size_t i = 0; i < ELEMENTSOF(exts); i++) {
                size_t n = strlen(exts[i]);
                if (len > n && strcmp(name + len - n, exts[i]) == 0)
                        return true;
        }
        return false;
}

static int load_dir(struct policy_list *list, const char *dir)
{
        struct dirent **names = NULL;
        int n = scandir(dir, &names, NULL, alphasort), r = 0;

        if (n < 0)
                return log_error_errno(negative_errno(), "cannot list %s", dir);
        for (int i = 0; i < n; i++) {
                char path[4096];
                if (r >= 0 && is_policy_file_name(names[i]->d_name)) {
                        r = path_printf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
                        if (r >= 0)
                                r = load_file(list, path);
                }
                free(names[i]);
        }
        free(names);
        return r;
}

int policy_list_load_path(struct policy_list *list, const char *path)
{
        struct stat st;

        if (stat(path, &st) < 0)
                return log_error_errno(negative_errno(), "policies %s", path);
        return S_ISDIR(st.st_mode) ? load_dir(list, path) : load_file(list, path);
}

int supported_nics_load_file(struct supported_nics *s, const char *path)
{
        _cleanup_free_ char *data = NULL, *error = NULL;
        json_auto_t *doc = NULL;
        size_t size;
        int r = read_full_file(path, POLICY_FILE_MAX_SIZE, &data, &size);

        if (r < 0)
                return log_error_errno(r, "cannot read the supported-NIC file %s: %s", path,
                                       strerror(-r));
        r = yaml_to_json(data, size, YAML_JSON_NO_ALIASES, &doc, &error);
        if (r == -EINVAL)
                return log_error_errno(r, "supported-NIC file %s: %s", path,
                                       error ? error : "not YAML");
        if (r < 0)
                return log_error_errno(r, "supported-NIC file %s: out of memory", path);
        free(error);
        error = NULL;
        r = supported_nics_add_json(s, doc, path, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ? error : strerror(-r));
        return 0;
}

/* A source in a dlopen'ed library unregisters itself at dlclose: later
 * configuration changes, which rewrite every known source's cached level,
 * must not touch the unloaded library's memory (that would crash). */
#include "check.h"

#include <dlfcn.h>

VLOG_INIT("test.dlclose");

int main(int argc, char **argv)
{
    char plugin[512], *dump, *slash;
    int (*plugin_log)(int);
    void *handle;
    int records;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    snprintf(plugin, sizeof plugin, "%s", argv[0]);
    slash = strrchr(plugin, '/');
    CHECK(slash != NULL);
    snprintf(slash + 1, sizeof plugin - (size_t)(slash + 1 - plugin), "dlclose_plugin.so");

    if (argc > 1 && strcmp(argv[1], "late") == 0) {
        /* After vlog_shutdown every site asks again on its next call; the
         * plugin's late destructor logs after its VLOG_INIT destructor
         * took its sites back: that call must stop at the inline check,
         * or the library would keep pointers into the unmapped plugin,
         * and this filter change would follow them. */
        handle = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
        CHECK(handle != NULL);
        *(void **)&plugin_log = dlsym(handle, "plugin_log");
        CHECK(plugin_log != NULL);
        CHECK(plugin_log(0) == VLOG_PRIO_WARN);
        vlog_shutdown();
        CHECK(dlclose(handle) == 0);
        CHECK(vlog_set_filters("1:plugin 1:test") == 0);
        CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
        puts("ok");
        return 0;
    }

    for (int round = 0; round < 3; round++) {
        handle = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
        if (handle == NULL) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 1;
        }
        *(void **)&plugin_log = dlsym(handle, "plugin_log");
        CHECK(plugin_log != NULL);
        CHECK(plugin_log(round) == VLOG_PRIO_WARN);
        CHECK(dlclose(handle) == 0);
        /* Each of these rewrites every registered source's level. */
        CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
        CHECK(vlog_set_filters("1:plugin 2:test") == 0);
        CHECK(vlog_set_level(VLOG_PRIO_WARN) == 0);
        CHECK(vlog_set_filters("") == 0);
    }
    VLOG_ERROR("main still logs");

    /* The plugin's records outlive it: names are copied into the ring. */
    dump = check_dump(&records);
    CHECK(records == 4);
    CHECK(strstr(dump, ": error : plugin.storage : plugin_log:") != NULL);
    CHECK(strstr(dump, " : plugin message 2\n") != NULL);
    free(dump);
    puts("ok");
    return 0;
}

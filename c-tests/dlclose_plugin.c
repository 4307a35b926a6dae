/* A plugin with its own source, loaded and unloaded by dlclose.c. */
#include <vlog.h>

VLOG_INIT("plugin.storage");

/* Runs after VLOG_INIT's own destructor (a lower priority runs later):
 * its site must not be learnt again as the library goes away. */
__attribute__((destructor(101))) static void plugin_late(void)
{
    VLOG_DEBUG("a destructor after the plugin's own %d", 7);
}

int plugin_log(int i);
int plugin_log(int i)
{
    VLOG_ERROR("plugin message %d", i);
    return vlog__source.level;
}

/* A plugin with its own source, loaded and unloaded by dlclose.c. */
#include <vlog.h>

VLOG_INIT("plugin.storage");

int plugin_log(int i);
int plugin_log(int i)
{
    VLOG_ERROR("plugin message %d", i);
    return vlog__source.level;
}

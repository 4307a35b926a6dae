/* Every known source's cached level follows the configuration, including a
 * change of the default level alone. */
#include "check.h"

VLOG_INIT("util.object");

static vlog_source other = VLOG_SOURCE_INITIALIZER("qemu.driver");

int main(void)
{
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    /* Known from its call sites (VLOG_INIT handed them over at load) as
     * soon as vlog starts, before its first call. */
    CHECK(vlog__source.level == VLOG_PRIO_WARN);
    VLOG_ERROR("register");
    CHECK(vlog__source_enabled(&other, VLOG_PRIO_DEBUG) == 0);
    CHECK(vlog__source.level == VLOG_PRIO_WARN);
    CHECK(other.level == VLOG_PRIO_WARN);

    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    CHECK(vlog__source.level == VLOG_PRIO_DEBUG);
    CHECK(other.level == VLOG_PRIO_DEBUG);
    CHECK(vlog_default_source.level == VLOG_PRIO_DEBUG || vlog_default_source.level == 0);

    CHECK(vlog_set_filters("3:util.object 2:util 4:*") == 0);
    CHECK(vlog__source.level == VLOG_PRIO_WARN);
    CHECK(other.level == VLOG_PRIO_ERROR);

    /* off: not even errors; nothing is recorded, the macro's arguments are
     * not evaluated. */
    {
        vlog_stats before, after;
        int evaluated = 0;

        CHECK(vlog_set_filters("off:util.object 4:*") == 0);
        CHECK(vlog__source.level == 5);
        CHECK(other.level == VLOG_PRIO_ERROR);
        CHECK(vlog_get_stats(&before) == 0);
        VLOG_ERROR("not recorded %d", ++evaluated);
        CHECK(evaluated == 0);
        CHECK(vlog__source_enabled(&vlog__source, VLOG_PRIO_ERROR) == 0);
        CHECK(vlog_get_stats(&after) == 0);
        CHECK(after.records == before.records);
        CHECK(vlog_set_filters("OFF:util.object") == -1);
        CHECK_ERROR("off, or bt");
    }

    CHECK(vlog_set_filters("") == 0);
    CHECK(vlog_set_level(VLOG_PRIO_INFO) == 0);
    CHECK(vlog__source.level == VLOG_PRIO_INFO);
    CHECK(other.level == VLOG_PRIO_INFO);

    /* An unregistered source (its object is being unloaded) is off for
     * good: no longer updated, never registered again by a late call. */
    vlog__source_unregister(&other);
    CHECK(other.level == 5);
    CHECK(vlog_set_level(VLOG_PRIO_ERROR) == 0);
    CHECK(other.level == 5);
    CHECK(vlog__source_enabled(&other, VLOG_PRIO_ERROR) == 0);
    CHECK(other.level == 5);
    puts("ok");
    return 0;
}

/* PRIO:journald: entries in journald's native protocol. Logs a few messages
 * (one with a newline, one with structured fields, one whose fields have
 * OpenTelemetry's names, every priority) and prints
 * its pid; the driver reads them back with journalctl -o json from a
 * journald it started. */
#include "check.h"

VLOG_INIT("test.journald");

int main(void)
{
    CHECK(vlog_set_outputs("1:journald") == 0);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    VLOG_DEBUG("debug entry %d", 1);
    VLOG_INFO("info entry");
    VLOG_WARN("two\nlines");
    VLOG_FIELDS(VLOG_PRIO_ERROR, (VLOG_FIELD_STR("VM", "guest1"), VLOG_FIELD_INT("VCPUS", 4)),
                "error entry with fields");
    /* OpenTelemetry's names: journald takes them as HTTP_METHOD and
     * USER_ID; the second http.method is one name with the first, left out
     * and counted. */
    {
        vlog_stats before, after;
        CHECK(vlog_get_stats(&before) == 0);
        VLOG_FIELDS(VLOG_PRIO_ERROR,
                    (VLOG_FIELD_STR("http.method", "GET"), VLOG_FIELD_INT("user.id", 42),
                     VLOG_FIELD_STR("HTTP_METHOD", "POST")),
                    "entry with OpenTelemetry's names");
        CHECK(vlog_get_stats(&after) == 0);
        CHECK(after.bad_fields == before.bad_fields + 1);
    }
    printf("%d\n", (int)getpid());
    return 0;
}

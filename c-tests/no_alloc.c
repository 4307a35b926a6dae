/* Once running, recording a message allocates nothing: not when its
 * arguments are captured (any length up to VLOG_MESSAGE_MAX), not in the Rust
 * core, not for the ring or a file output (which renders the text at once),
 * not for structured fields, not for a child's line through a relay.
 * The program counts every call into the allocator by interposing glibc's
 * entry points. */
#include "check.h"

#include "count_alloc.h"

VLOG_INIT("test.noalloc");

int main(void)
{
    static char text[900];
    long before;
    vlog_stats stats;

    static const char hclog[] = "{\"@level\":\"debug\",\"@message\":\"hello\",\"extra\":\"hi\","
                                "\"numbers\":[1,2,3],\"n\":7}\n";
    vlog_relay *relay;

    memset(text, 'x', sizeof text - 1);
    CHECK(vlog_set_outputs("1:file:/dev/null 4:stderr") == 0);
    CHECK(vlog_set_filters("1:noalloc 1:child.noalloc") == 0);
    VLOG_DEBUG("warm-up %d", 0);
    relay = vlog_relay_new("child.noalloc", VLOG_PRIO_INFO);
    CHECK(relay != NULL);

    before = count_alloc_calls;
    for (int i = 0; i < 10000; i++) {
        VLOG_DEBUG("Logging two integers: %d %d", i, -i);
        VLOG_INFO("a string: %s", text + i % 800);
        VLOG_WARN("a double: %f", i * 0.5);
        /* Fields, and a child's line relayed with its fields. */
        VLOG_FIELDS(VLOG_PRIO_INFO, (VLOG_FIELD_STR("VM", "guest1"), VLOG_FIELD_INT("N", i)),
                    "with fields %d", i);
        CHECK(vlog_relay_feed(relay, hclog, sizeof hclog - 1) == 0);
    }
    CHECK(count_alloc_calls == before);
    vlog_relay_close(relay);

    /* In the flight recorder (no output prints debug messages), a long message
     * is recorded as its format and arguments: still nothing. */
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    before = count_alloc_calls;
    VLOG_DEBUG("%s%s%s%s", text, text, text, text);
    CHECK(count_alloc_calls == before);

    /* And the counter does count: a message formatted at the call (long
     * double is) that is longer than the stack buffer takes one heap buffer. */
    VLOG_DEBUG("%1500.1Lf", 1.0L);
    CHECK(count_alloc_calls == before + 1);
    CHECK(vlog_get_stats(&stats) == 0);
    CHECK(stats.records == 50003);
    puts("ok");
    return 0;
}

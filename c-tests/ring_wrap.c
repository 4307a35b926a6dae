/* A small ring wraps many times: it keeps the newest records, in order, with
 * no gap in the sequence, and counts exactly how many it overwrote. */
#include "check.h"

VLOG_INIT("test.ring");

int main(void)
{
    const int total = 10000;
    vlog_stats stats;
    char *dump, *p;
    int records, expect = 0, first = -1, n = 0;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_set_buffer_size(16 * 1024) == 0);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    for (int i = 0; i < total; i++)
        VLOG_DEBUG("message %d %.*s", i, i % 50, "padding padding padding padding padding padding ");

    dump = check_dump(&records);
    CHECK(vlog_get_stats(&stats) == 0);
    CHECK(stats.buffer_size == 16 * 1024);
    CHECK(stats.records == (uint64_t)total);
    CHECK(stats.lost + (uint64_t)records == stats.records);
    CHECK(records > 50 && records < total);
    CHECK(strstr(dump, "vlog:") == NULL); /* nothing damaged */

    /* Consecutive messages, ending with the last one. */
    for (p = dump; (p = strstr(p, " : message ")) != NULL; p++) {
        int i = atoi(p + 11);
        if (first < 0)
            first = expect = i;
        CHECK(i == expect);
        expect++;
        n++;
    }
    CHECK(n == records);
    CHECK(expect == total);
    CHECK((uint64_t)first == stats.lost);

    /* Growing the ring keeps what it held. */
    CHECK(vlog_set_buffer_size(1 << 20) == 0);
    free(dump);
    dump = check_dump(&n);
    CHECK(n == records);
    free(dump);
    puts("ok");
    return 0;
}

/* Eviction's walk over the oldest records, done ahead without the lock by
 * the next thread that records (ring/ahead.rs), belongs to the ring it
 * walked. A ring replaced (the buffer size set to 0 and back) is mapped
 * where the old one was as often as not, and starts again at head 0: it
 * must never take the old ring's walk from 0, which would put its head
 * inside a record (nothing readable, the loss miscounted, every later
 * message dropped as waiting for a record "in flight").
 *
 * Each round: lines printed by an output fill a ring the general way (room
 * made, so a walk is wanted, and none made); a new ring gets one flight
 * recorder's record, whose thread walks it from 0; a third ring, likely at
 * the second's address, is filled past a lap. Its records must all be
 * readable and counted. Whether the addresses are reused is up to the
 * kernel and to when the replaced ring is freed (once no reader is in it):
 * the checks hold either way. */
#include "check.h"
#include <sched.h>

VLOG_INIT("test.walk_ahead");

/* Replaces the ring, and gives the replaced one every chance to be freed
 * (a configuration call frees it when no reader, the writer thread
 * included, is inside it) before the next is mapped. */
static void replace_ring(void)
{
    CHECK(vlog_set_buffer_size(0) == 0);
    for (int i = 0; i < 50; i++) {
        CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
        sched_yield();
    }
    CHECK(vlog_set_buffer_size(16 * 1024) == 0);
}

int main(void)
{
    vlog_stats st;
    int records;
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    CHECK(vlog_set_outputs("3:file:/dev/null") == 0);
    for (int round = 0; round < 10; round++) {
        replace_ring();
        for (int i = 0; i < 400; i++)
            VLOG_WARN("printed %d", i);
        replace_ring();
        VLOG_DEBUG("one record, walked from 0");
        replace_ring();
        for (int i = 0; i < 400; i++)
            VLOG_DEBUG("round %d record %d, longer than the one record before", round, i);
        char *text = check_dump(&records);
        vlog_get_stats(&st);
        if (records < 100 || check_count(text, "damage") != 0 || st.dropped_in_flight != 0 ||
            check_count(text, "record 399,") != 1) {
            fprintf(stderr,
                    "round %d: %d records dumped, %d damaged, lost %llu, dropped in flight %llu, "
                    "the newest record %d times:\n%s\n",
                    round, records, check_count(text, "damage"), (unsigned long long)st.lost,
                    (unsigned long long)st.dropped_in_flight, check_count(text, "record 399,"),
                    text);
            return 1;
        }
        free(text);
    }
    printf("walk_ahead: 10 rounds, every ring readable\n");
    return 0;
}

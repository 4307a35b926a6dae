/* How many records of a given kind a ring holds once it is full (vlog(7),
 * RING SIZE): logs 400,000 records of one kind into the ring file the
 * environment names, for bench-c/ring_size.sh to count with vlog-dump. */
#include <stdlib.h>

#include <vlog.h>

VLOG_INIT("myd.disk");

int main(int argc, char **argv)
{
    int kind = argc > 1 ? atoi(argv[1]) : 0;

    for (int i = 0; i < 400000; i++) {
        switch (kind) {
        case 0:
            VLOG_DEBUG("cleaning up after the failed request");
            break;
        case 1:
            VLOG_DEBUG("request %d: %s %zu bytes at block %llu", i, i & 1 ? "read" : "write",
                       (size_t)i * 512, (unsigned long long)i * 8);
            break;
        default:
            VLOG_FIELDS(VLOG_PRIO_DEBUG, (VLOG_FIELD_STR("VM", "guest1"), VLOG_FIELD_INT("VCPUS", 4)),
                        "started %s", "guest1");
        }
    }
    return 0;
}

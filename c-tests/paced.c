/* Lines at a steady pace into whatever VLOG_OUTPUTS names, each numbered,
 * then a flush: for tests that rotate or move the outputs' files while it
 * runs (logrotate from the distribution).
 *
 *   paced LINES USEC    LINES warnings "line N", USEC microseconds apart */
#include "check.h"

#include <unistd.h>

VLOG_INIT("test.paced");

int main(int argc, char **argv)
{
    long lines, usec;

    CHECK(argc == 3);
    lines = atol(argv[1]);
    usec = atol(argv[2]);
    CHECK(lines > 0 && usec >= 0);
    for (long i = 0; i < lines; i++) {
        VLOG_WARN("line %ld", i);
        if (usec > 0)
            usleep((useconds_t)usec);
    }
    CHECK(vlog_flush() == 0);
    return 0;
}

/* The version a program was built with and the library it runs with, and
 * the ABI check: built against this vlog.h the program logs; built against
 * a header of another layout (argv[1] "mismatched") it is told once on
 * stderr and logs nothing, rather than corrupting memory. */
#include "check.h"

VLOG_INIT("abi.test");

int main(int argc, char **argv)
{
    int mismatched = argc > 1 && strcmp(argv[1], "mismatched") == 0;
    vlog_stats stats;

    CHECK(strcmp(vlog_version(), VLOG_VERSION) == 0);
    CHECK(VLOG_VERSION_MAJOR == 0 && VLOG_VERSION_MINOR >= 1);
    CHECK(vlog_set_filters("1:abi") == 0);
    CHECK(vlog_set_outputs("4:stderr") == 0);
    VLOG_ERROR("from this build");
    VLOG_DEBUG("and a deferred one %d", 7);
    CHECK(vlog_get_stats(&stats) == 0);
    CHECK(stats.records == (mismatched ? 0u : 2u));
    /* The check is there however often it is asked. */
    CHECK((vlog_abi_check(VLOG_ABI_VERSION, sizeof(vlog_source), sizeof(vlog__site)) == 0) ==
          !mismatched);
    return 0;
}

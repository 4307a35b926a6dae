/* A C++ file that includes glog's <glog/logging.h>, whose VLOG(n) is a
 * stream, and vlog.h with VLOG_NO_SHORT_NAMES: both compile without a
 * warning, VLOG stays glog's, and vlog logs through VLOG_AT. (Abseil's
 * absl/log/log.h defines VLOG the same way.) Compiled as C++ by the test,
 * with -lglog. */
#include <glog/logging.h>
/* glog's CHECK: this test's helper (check.h) has its own, vlog.h none. */
#undef CHECK
#define VLOG_NO_SHORT_NAMES
#include "check.h"

VLOG_INIT("namesakes.glog");

int main(int argc, char **argv)
{
    vlog_stats before, after;
    char *dump;

    (void)argc;
    google::InitGoogleLogging(argv[0]);
    FLAGS_logtostderr = true;
    FLAGS_v = 1;
    CHECK(vlog_get_stats(&before) == 0);
    VLOG(1) << "glog says " << 1;
    VLOG_AT(VLOG_PRIO_WARN, "vlog says %d", 2);
    VLOG_AT_ONCE(VLOG_PRIO_ERROR, "vlog once");
    CHECK(vlog_get_stats(&after) == 0);
    CHECK(after.records - before.records == 2);
    dump = check_dump(NULL);
    CHECK_HAS(dump, ": warning : namesakes.glog : main:");
    CHECK_HAS(dump, " : vlog says 2\n");
    CHECK(strstr(dump, "glog says") == NULL);
    free(dump);
    return 0;
}

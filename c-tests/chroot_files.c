/* A daemon that configures vlog, then chroots (as many do once their logs
 * are open), into a jail that has the same paths:
 *
 *   chroot_files DIR JAIL   outputs DIR/d.log and DIR/r.log?max=64K&keep=2
 *                           (the ring file, the control socket and
 *                           VLOG_CONFIG in DIR too, from the environment);
 *                           "before the chroot", chroot(JAIL), prints
 *                           "chrooted" and waits for a line on stdin (the
 *                           driver has rotated DIR/d.log away, as
 *                           logrotate does); vlog_reopen(); 400 lines
 *                           "after the chroot N" (past r.log's max); a
 *                           new ring size, refused; prints "reload" and
 *                           waits for a line (the driver asked for a
 *                           reload); closes every descriptor from 3 and
 *                           waits until the control thread has said what
 *                           it did of its socket; a flush, which fails:
 *                           the outputs' files and their directories'
 *                           descriptors are gone with the rest.
 *
 * The driver checks that every line went to DIR, that nothing was made in
 * the jail, and what was refused and why. */
#include "check.h"

#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

VLOG_INIT("test.chroot");

int main(int argc, char **argv)
{
    char spec[600], line[16];
    vlog_stats st;
    uint64_t recorded;

    CHECK(argc == 3);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    snprintf(spec, sizeof spec, "1:file:%s/d.log 1:file:%s/r.log?max=64K&keep=2", argv[1],
             argv[1]);
    if (vlog_set_outputs(spec) != 0) {
        fprintf(stderr, "%s\n", vlog_last_error());
        return 1;
    }
    VLOG_INFO("before the chroot");
    CHECK(vlog_flush() == 0);
    CHECK(chroot(argv[2]) == 0 && chdir("/") == 0);
    printf("chrooted\n");
    fflush(stdout);
    CHECK(fgets(line, sizeof line, stdin) != NULL);
    CHECK(vlog_reopen() == 0);
    for (int i = 0; i < 400; i++)
        VLOG_INFO("after the chroot %d, with enough text to pass r.log's max soon: %0100d", i, 0);
    CHECK(vlog_flush() == 0);
    /* The ring file would be made anew at its path: in the jail. */
    CHECK(vlog_set_buffer_size(1 << 20) == -1);
    CHECK_ERROR("root moved");
    printf("reload\n");
    fflush(stdout);
    CHECK(fgets(line, sizeof line, stdin) != NULL);
    /* The control socket's descriptor closed: its thread notices within a
     * second and says what it did, which is a record. */
    CHECK(vlog_get_stats(&st) == 0);
    recorded = st.records;
    CHECK(syscall(SYS_close_range, 3U, ~0U, 0U) == 0);
    for (int i = 0; i < 3000 && st.records == recorded; i++) {
        struct timespec ms = {0, 10 * 1000 * 1000};
        nanosleep(&ms, NULL);
        CHECK(vlog_get_stats(&st) == 0);
    }
    CHECK(st.records > recorded);
    /* (The file outputs lost their descriptors and the directory's too:
     * nothing may be opened now, and the flush says so.) */
    CHECK(vlog_flush() == -1);
    return 0;
}

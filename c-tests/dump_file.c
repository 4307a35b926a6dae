/* VLOG_DUMP=file:PATH makes no file before a crash (an empty crash file
 * beside a program that never crashed reads as a crash), and the first
 * crash makes it, holding the dump; a file that holds earlier dumps is
 * appended to. With JAIL, the program chroots into it after vlog is set
 * up, as daemons do: the file is still made where it was configured, never
 * at the same path inside the jail.
 *
 *   dump_file PATH [JAIL]      (run with VLOG_DUMP=file:PATH; crashes) */
#include "check.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

VLOG_INIT("test.dump_file");

int main(int argc, char **argv)
{
    struct stat st;

    CHECK(argc == 2 || argc == 3);
    /* vlog is set up by now: the dump file's path was checked. */
    VLOG_WARN("about to crash");
    CHECK(vlog_flush() == 0);
    if (stat(argv[1], &st) == 0 && st.st_size == 0) {
        fprintf(stderr, "an empty dump file before any crash: %s\n", argv[1]);
        return 1;
    }
    if (argc == 3) {
        CHECK(chroot(argv[2]) == 0);
        CHECK(chdir("/") == 0);
    }
    raise(SIGSEGV);
    return 0;
}

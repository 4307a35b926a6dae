/* A program with an alternate signal stack of its own, too small for a dump
 * (8 KiB: what Rust's std gives each thread), and its own SIGSEGV handler
 * on it. vlog never replaces the stack. The dump signal runs on the
 * thread's own stack, so the program goes on with its dump written; a crash
 * writes the dump's first line, says why there is no backtrace or records,
 * writes the ring image, and hands the signal to the program's handler
 * (instead of overflowing the stack, which would end the process before
 * the handler ran).
 *
 *   SMALL_DUMP=file:PATH small_altstack dump|crash
 *
 * The handler is the program's before vlog starts: VLOG_DUMP is set from
 * SMALL_DUMP only then (with a VLOG_* variable at start, vlog would start
 * first, and the program's handler would replace vlog's). */
#include "check.h"

#include <signal.h>

VLOG_INIT("test.small_altstack");

static void on_segv(int sig)
{
    static const char said[] = "the program's handler\n";
    (void)sig;
    if (write(1, said, sizeof said - 1) < 0)
        _exit(43);
    _exit(42);
}

int main(int argc, char **argv)
{
    static char own[8192];
    stack_t mine = {.ss_sp = own, .ss_flags = 0, .ss_size = sizeof own}, ss;
    struct sigaction sa;

    CHECK(argc == 2);
    CHECK(sigaltstack(&mine, NULL) == 0);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sa.sa_flags = SA_ONSTACK;
    CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
    CHECK(getenv("SMALL_DUMP") != NULL);
    CHECK(setenv("VLOG_DUMP", getenv("SMALL_DUMP"), 1) == 0);
    CHECK(setenv("VLOG_FILTERS", "1:small_altstack", 1) == 0);
    CHECK(setenv("VLOG_OUTPUTS", "4:stderr", 1) == 0);
    CHECK(vlog_install_crash_handler() == 0);
    for (int i = 0; i < 50; i++)
        VLOG_DEBUG("message %d before the signal", i);
    CHECK(sigaltstack(NULL, &ss) == 0);
    CHECK(ss.ss_sp == own && ss.ss_size == sizeof own);

    if (strcmp(argv[1], "dump") == 0) {
        CHECK(vlog_set_dump_signal(SIGUSR2) == 0);
        CHECK(raise(SIGUSR2) == 0);
        printf("went on\n");
        return 0;
    }
    CHECK(strcmp(argv[1], "crash") == 0);
    CHECK(raise(SIGSEGV) == 0);
    return 3;
}

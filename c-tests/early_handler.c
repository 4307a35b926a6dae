/*
 * For the tests of libvlog-syslog.so: a library whose constructor installs
 * a SIGSEGV handler before vlog's starts (preloaded ahead of it), as
 * another preloaded library or an earlier constructor may. vlog's crash
 * handler dumps, then hands the signal to this one.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void on_segv(int sig)
{
    static const char said[] = "the earlier handler ran\n";

    if (write(1, said, sizeof said - 1) < 0) {
        /* nothing to be done */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install_early(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sigaction(SIGSEGV, &sa, NULL);
}

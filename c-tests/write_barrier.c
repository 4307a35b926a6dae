/* A program that knows nothing of vlog and recovers from SIGSEGV as part of
 * its work, as garbage collectors, databases and libsigsegv do: a write
 * barrier that makes a page read-only, and a SA_SIGINFO handler that makes
 * it writable again when a store faults on it. It logs with syslog(3).
 *
 *   write_barrier recover N   N faults, each recovered, a syslog call after
 *                             each; prints "recovered N faults"
 *   write_barrier quiet N     the same with no syslog call in the loop: the
 *                             same store faults again and again, with the
 *                             same registers, and is mended each time
 *   write_barrier stuck       a handler that returns without mending the
 *                             page four times, then mends it: the fault comes
 *                             back unchanged; prints "mended after 5 calls"
 *   write_barrier resethand   a one-shot handler (SA_RESETHAND) that returns
 *                             without mending: the fault comes again, to the
 *                             default action; dies of SIGSEGV
 *   write_barrier reraise     a handler that reports the fault, sets SIG_DFL
 *                             and raises it again: dies of SIGSEGV
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <syslog.h>
#include <unistd.h>

static volatile int *page;
static long page_size;
static volatile sig_atomic_t calls, mend_after;

static void say(const char *text)
{
    if (write(1, text, strlen(text)) < 0) {
        /* nothing to be done */
    }
}

static void on_segv(int sig, siginfo_t *info, void *ctx)
{
    char *at = (char *)page;

    (void)ctx;
    calls++;
    if (mend_after == 1000)
        say("the one-shot handler ran\n");
    if (mend_after < 0) {
        say("the program's handler reports the fault\n");
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    if ((char *)info->si_addr < at || (char *)info->si_addr >= at + page_size) {
        say("a fault outside the page\n");
        _exit(3);
    }
    if (calls > mend_after)
        mprotect(at, (size_t)page_size, PROT_READ | PROT_WRITE);
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    long n = 0;

    if (argc < 2)
        return 2;
    page_size = sysconf(_SC_PAGESIZE);
    page = mmap(NULL, (size_t)page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
    if (page == MAP_FAILED)
        return 2;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    openlog("write-barrier", LOG_PID, LOG_DAEMON);
    syslog(LOG_INFO, "starting %s", argv[1]);
    if ((strcmp(argv[1], "recover") == 0 || strcmp(argv[1], "quiet") == 0) && argc == 3) {
        int quiet = strcmp(argv[1], "quiet") == 0;
        n = atol(argv[2]);
        for (long i = 0; i < n; i++) {
            mprotect((void *)page, (size_t)page_size, PROT_READ);
            calls = 0;
            page[0] = 1;
            if (!quiet)
                syslog(LOG_INFO, "barrier %ld", i);
        }
        printf("recovered %ld faults\n", n);
    } else if (strcmp(argv[1], "stuck") == 0) {
        mend_after = 4;
        mprotect((void *)page, (size_t)page_size, PROT_READ);
        page[0] = 1;
        printf("mended after %d calls\n", (int)calls);
    } else if (strcmp(argv[1], "resethand") == 0) {
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
        sigaction(SIGSEGV, &sa, NULL);
        mend_after = 1000;
        syslog(LOG_INFO, "the last message before the crash");
        mprotect((void *)page, (size_t)page_size, PROT_READ);
        page[0] = 1;
        printf("not reached\n");
    } else if (strcmp(argv[1], "reraise") == 0) {
        mend_after = -1;
        syslog(LOG_INFO, "the last message before the crash");
        mprotect((void *)page, (size_t)page_size, PROT_READ);
        page[0] = 1;
        printf("not reached\n");
    } else {
        return 2;
    }
    return 0;
}

/* Crash scenarios for the crash-handler tests (tests/c_tests.rs runs each and
 * checks the exit signal, the core flag and the dump):
 *
 *   crash [--no-vlog] segv|bus|ill|fpe|abrt|sys|trap   one fatal signal
 *   crash overflow-main | overflow-thread              stack overflow
 *   crash locked FIFO     crash while another thread holds the lock mid-write
 *   crash two             two threads crash at once
 *   crash chain           a handler installed before vlog's is called
 *   crash chain-after     a handler installed after vlog set itself up (its
 *                         first call) calls the one it replaced: vlog's
 *   crash dump-signal     VLOG_DUMP_SIGNAL dumps and the process goes on
 *   crash dump-signal-api the same through vlog_set_dump_signal
 *   crash explicit        vlog_install_crash_handler despite VLOG_DUMP=off
 *   crash flood [N]       fills a big ring (N records, 20,000 long ones
 *                         by default; short ones when N is given), then
 *                         SIGSEGV (a dump that takes long)
 *   crash inside          SIGSEGV inside vlog_write, with the lock held by the
 *                         crashing thread itself
 *   crash blocked-before  every signal blocked before vlog_init, then SIGSEGV
 *   crash blocked-error   every signal blocked after the first calls, one
 *                         error, then SIGSEGV
 *   crash blocked-later   every signal blocked after the first calls, 1,100
 *                         warnings, then SIGSEGV
 *   crash blocked-thread  every signal blocked after the first calls, then
 *                         a thread (which inherits the mask) logs once and
 *                         faults
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vlog.h>

VLOG_INIT("test.crash");

static void fault(const char *what)
{
    if (strcmp(what, "segv") == 0) {
        volatile int *p = NULL;
        *p = 1;
    } else if (strcmp(what, "bus") == 0) {
        /* Touching a page of a file mapping beyond the end of the file. */
        char path[] = "/tmp/vlog-bus-XXXXXX";
        int fd = mkstemp(path);
        volatile char *map;
        unlink(path);
        map = (volatile char *)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        map[0] = 1;
    } else if (strcmp(what, "ill") == 0) {
        __builtin_trap();
    } else if (strcmp(what, "fpe") == 0) {
        volatile int zero = 0, one = 1;
        printf("%d\n", one / zero);
    } else if (strcmp(what, "abrt") == 0) {
        abort();
    } else if (strcmp(what, "sys") == 0) {
        raise(SIGSYS);
    } else if (strcmp(what, "trap") == 0) {
        raise(SIGTRAP);
    }
    fprintf(stderr, "no fault for %s\n", what);
    exit(3);
}

/* Deep enough to overflow any stack; the compiler cannot prove it endless. */
static volatile long depth_limit = 1L << 40;

static int recurse(long depth)
{
    volatile char pad[1024];
    if (depth > depth_limit)
        return 0;
    pad[0] = (char)depth;
    return recurse(depth + 1) + pad[0];
}

static void *overflow_thread(void *arg)
{
    (void)arg;
    VLOG_WARN("second thread about to overflow its stack");
    recurse(0);
    return NULL;
}

/* The signalfd pattern: every signal blocked, to be read from a
 * descriptor. */
static void block_every_signal(void)
{
    sigset_t all;

    sigfillset(&all);
    if (sigprocmask(SIG_BLOCK, &all, NULL) != 0)
        exit(9);
}

static void *blocked_thread(void *arg)
{
    (void)arg;
    VLOG_WARN("a thread with every signal blocked");
    fault("segv");
    return NULL;
}

static const char *fifo_path;

static void *hold_lock(void *arg)
{
    (void)arg;
    /* The file output is a FIFO nobody reads: once its buffer is full this
     * thread blocks in write(2) holding the logger's lock. */
    for (long i = 0;; i++)
        VLOG_ERROR("filling the fifo %ld %0200d", i, 0);
    return NULL;
}

static pthread_barrier_t barrier;

static void *crash_together(void *arg)
{
    (void)arg;
    VLOG_WARN("thread ready to crash");
    pthread_barrier_wait(&barrier);
    fault("segv");
    return NULL;
}

static void previous_handler(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "previous handler: signal %d, address %p\n", sig, info->si_addr);
    signal(sig, SIG_DFL);
    raise(sig);
}

static struct sigaction replaced;

/* A program's handler that chains to the one it replaced, as a careful
 * handler does. */
static void later_handler(int sig, siginfo_t *info, void *ctx)
{
    fprintf(stderr, "later handler: signal %d\n", sig);
    if (replaced.sa_flags & SA_SIGINFO)
        replaced.sa_sigaction(sig, info, ctx);
    else if (replaced.sa_handler != SIG_DFL && replaced.sa_handler != SIG_IGN)
        replaced.sa_handler(sig);
    signal(sig, SIG_DFL);
    raise(sig);
}

int main(int argc, char **argv)
{
    int use_vlog = 1;
    const char *mode;

    if (argc > 1 && strcmp(argv[1], "--no-vlog") == 0) {
        use_vlog = 0;
        argv++;
        argc--;
    }
    if (argc < 2)
        return 2;
    mode = argv[1];

    if (strcmp(mode, "chain") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = previous_handler;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, NULL);
    }
    if (strcmp(mode, "chain-after") == 0) {
        struct sigaction sa;
        /* No vlog_init: the first message sets vlog up, handler included. */
        VLOG_WARN("the first call");
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = later_handler;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, &replaced);
        mode = "segv";
    }
    if (strcmp(mode, "blocked-before") == 0)
        block_every_signal();
    if (use_vlog && vlog_init() < 0)
        return 4;
    if (strcmp(mode, "explicit") == 0 && vlog_install_crash_handler() != 0)
        return 7;
    if (strcmp(mode, "dump-signal-api") == 0) {
        if (vlog_set_dump_signal(SIGSEGV) != -1 || !strstr(vlog_last_error(), "SIGUSR2") ||
            vlog_set_dump_signal(0) != -1 || vlog_set_dump_signal(SIGUSR1) != 0)
            return 8;
    }
    /* Without vlog: not a call of it (the first call sets vlog up, crash
     * handler included). */
    for (int i = 0; use_vlog && i < 3; i++)
        VLOG_WARN("last words %d before %s", i, mode);

    if (strncmp(mode, "blocked-", 8) == 0 && strcmp(mode, "blocked-before") != 0)
        block_every_signal();
    if (strcmp(mode, "blocked-before") == 0) {
        fault("segv");
    } else if (strcmp(mode, "blocked-error") == 0) {
        VLOG_ERROR("an error after every signal was blocked");
        fault("segv");
    } else if (strcmp(mode, "blocked-later") == 0) {
        for (int i = 0; i < 1100; i++)
            VLOG_WARN("warning %d after every signal was blocked", i);
        fault("segv");
    } else if (strcmp(mode, "blocked-thread") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, blocked_thread, NULL);
        pthread_join(t, NULL);
    } else if (strcmp(mode, "overflow-main") == 0) {
        recurse(0);
    } else if (strcmp(mode, "overflow-thread") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, overflow_thread, NULL);
        pthread_join(t, NULL);
    } else if (strcmp(mode, "locked") == 0) {
        pthread_t t;
        int reader;
        char spec[300];
        fifo_path = argv[2];
        reader = open(fifo_path, O_RDONLY | O_NONBLOCK);
        snprintf(spec, sizeof spec, "4:file:%s", fifo_path);
        if (reader < 0 || vlog_set_outputs(spec) != 0)
            return 5;
        pthread_create(&t, NULL, hold_lock, NULL);
        sleep(1); /* the FIFO (64 KiB) is full long before this */
        fault("segv");
    } else if (strcmp(mode, "two") == 0) {
        pthread_t a, b;
        pthread_barrier_init(&barrier, NULL, 2);
        pthread_create(&a, NULL, crash_together, NULL);
        pthread_create(&b, NULL, crash_together, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
    } else if (strcmp(mode, "chain") == 0 || strcmp(mode, "explicit") == 0) {
        fault("segv");
    } else if (strcmp(mode, "dump-signal") == 0 || strcmp(mode, "dump-signal-api") == 0) {
        raise(strcmp(mode, "dump-signal") == 0 ? SIGUSR2 : SIGUSR1);
        VLOG_WARN("still running after the dump");
        puts("survived");
        return 0;
    } else if (strcmp(mode, "inside") == 0) {
        /* A bad message pointer faults while vlog copies it, under the lock. */
        vlog_write(&vlog__source, VLOG_PRIO_ERROR, __FILE__, __LINE__, __func__,
                   (const char *)(uintptr_t)16, 100, 100);
    } else if (strcmp(mode, "flood") == 0 && argc > 2) {
        long n = atol(argv[2]);
        for (long i = 0; i < n; i++)
            VLOG_WARN("flood %ld of %ld", i, n);
        fault("segv");
    } else if (strcmp(mode, "flood") == 0) {
        for (int i = 0; i < 20000; i++)
            VLOG_WARN("flood %d %0150d", i, 0);
        fault("segv");
    } else {
        fault(mode);
    }
    return 6;
}

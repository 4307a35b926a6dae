/* The crash path hands back what it borrowed:
 *
 *   crash_handback recover       a SIGSEGV the program recovers from with
 *                                siglongjmp (its handler installed before
 *                                vlog's): afterwards SIGALRM is the
 *                                program's again, no alarm of vlog's is
 *                                pending, the mask is the program's, and a
 *                                second fault is dumped too
 *   crash_handback recover-siginfo  the same with a SA_SIGINFO handler,
 *                                which gets each fault before any dump (it
 *                                may recover): neither is dumped
 *   crash_handback signal-chain  VLOG_DUMP_SIGNAL's signal had a handler of
 *                                the program's: it still runs, after the dump
 *   crash_handback during-dump   a crash while a requested dump runs is
 *                                dumped at once and dies by its signal
 *   crash_handback fork-in-dump  a child forked while a requested dump runs
 *                                dumps its own crash
 *   crash_handback fork-in-crash a child forked while another thread's crash
 *                                is dumped logs an error (its outputs are not
 *                                stopped: the dumping thread is not in it)
 *                                and writes DUMP_PATH.child
 *   crash_handback ignored       SIGTRAP ignored before vlog took it (the
 *                                driver starts it so): after vlog's dump
 *                                the program goes on, and so do its
 *                                outputs (DUMP_PATH.log)
 *
 * The dump goes where VLOG_DUMP says (the driver gives a file). */
#include "check.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

VLOG_INIT("test.handback");

static sigjmp_buf recovery;
static volatile sig_atomic_t alarms, faults, program_dump_handler;

static void on_segv(int sig)
{
    (void)sig;
    faults++;
    siglongjmp(recovery, 1);
}

static void on_segv_info(int sig, siginfo_t *info, void *ctx)
{
    (void)sig;
    (void)info;
    (void)ctx;
    faults++;
    siglongjmp(recovery, 1);
}

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

static void on_usr2(int sig, siginfo_t *info, void *ctx)
{
    (void)sig;
    (void)ctx;
    if (info != NULL && info->si_signo == SIGUSR2)
        program_dump_handler++;
}

/* A real fault: a store to a page that allows nothing. */
static void fault(void)
{
    static volatile int *volatile page;
    if (page == NULL) {
        void *map = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(map != MAP_FAILED);
        page = map;
    }
    *page = 1;
}

static void handle(int sig, void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    CHECK(sigaction(sig, &sa, NULL) == 0);
}

/* The program's handlers, installed before vlog's: in a constructor that
 * runs before VLOG_INIT's (which sets vlog up, VLOG_* being set), as a
 * library loaded first would. HANDBACK_MODE names the mode. */
__attribute__((constructor(101))) static void program_handlers_first(void)
{
    const char *mode = getenv("HANDBACK_MODE");
    struct sigaction sa;

    if (mode != NULL && strcmp(mode, "recover") == 0) {
        handle(SIGSEGV, on_segv);
        handle(SIGALRM, on_alarm);
    }
    if (mode != NULL && strcmp(mode, "recover-siginfo") == 0) {
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv_info;
        sa.sa_flags = SA_SIGINFO;
        CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
        handle(SIGALRM, on_alarm);
    }
    if (mode != NULL && strcmp(mode, "signal-chain") == 0) {
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_usr2;
        sa.sa_flags = SA_SIGINFO;
        CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);
    }
}

static int recover(void)
{
    struct sigaction now;
    sigset_t mask;

    CHECK(vlog_init() == 0);
    VLOG_WARN("before the first fault");
    for (int round = 0; round < 2; round++) {
        unsigned left;
        alarm(20); /* the program's own, pending through the fault */
        if (sigsetjmp(recovery, 1) == 0)
            fault();
        CHECK(faults == round + 1);
        /* What vlog borrowed is back: SIGALRM's handler, the program's
         * alarm (not vlog's watchdog), the signal mask. */
        CHECK(sigaction(SIGALRM, NULL, &now) == 0);
        CHECK(now.sa_handler == on_alarm);
        left = alarm(0);
        CHECK(left >= 17 && left <= 20);
        CHECK(sigprocmask(SIG_BLOCK, NULL, &mask) == 0);
        CHECK(!sigismember(&mask, SIGSEGV) && !sigismember(&mask, SIGALRM) &&
              !sigismember(&mask, SIGBUS) && !sigismember(&mask, SIGPIPE));
        /* The program's own alarm reaches the program. */
        alarm(1);
        while (alarms == round)
            pause();
        VLOG_WARN("recovered %d", round);
    }
    puts("recovered twice");
    return 0;
}

static int signal_chain(void)
{
    CHECK(vlog_init() == 0); /* VLOG_DUMP_SIGNAL=USR2 */
    VLOG_WARN("before the request");
    raise(SIGUSR2);
    CHECK(program_dump_handler == 1);
    CHECK(vlog_set_dump_signal(SIGUSR1) == 0);
    puts("chained");
    return 0;
}

/* A dump that takes a while: a ring of many records, dumped on request by
 * this thread while another one watches the dump file grow. */
static const char *dump_path;
static volatile int requested;

static void *request_dump(void *arg)
{
    (void)arg;
    requested = 1;
    raise(SIGUSR2);
    return NULL;
}

static void wait_for_the_dump_to_start(void)
{
    struct stat st;
    for (;;) {
        if (stat(dump_path, &st) == 0 && st.st_size > 0)
            return;
        usleep(100);
    }
}

static int while_dumping(int fork_first)
{
    pthread_t thread;

    dump_path = getenv("DUMP_PATH");
    CHECK(dump_path != NULL);
    CHECK(vlog_init() == 0); /* VLOG_DUMP=file:DUMP_PATH, VLOG_DUMP_SIGNAL=USR2 */
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_set_buffer_size(4u << 20) == 0);
    for (long i = 0; i < 40000; i++)
        VLOG_WARN("filling the ring %ld with a long enough message", i);
    CHECK(pthread_create(&thread, NULL, request_dump, NULL) == 0);
    wait_for_the_dump_to_start();
    if (fork_first) {
        pid_t child = fork();
        int status;
        CHECK(child >= 0);
        if (child == 0) {
            VLOG_ERROR("the child crashes");
            fault();
        }
        CHECK(waitpid(child, &status, 0) == child);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
        CHECK(pthread_join(thread, NULL) == 0);
        puts("the child died by its signal");
        return 0;
    }
    fault();
    return 9;
}

static void *crash_in_thread(void *arg)
{
    (void)arg;
    fault();
    return NULL;
}

/* A child forked while another thread's crash is dumped. */
static int fork_in_crash(void)
{
    pthread_t thread;
    char marker[600];
    pid_t child;

    dump_path = getenv("DUMP_PATH");
    CHECK(dump_path != NULL);
    snprintf(marker, sizeof marker, "%s.child", dump_path);
    CHECK(vlog_init() == 0);
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_set_buffer_size(4u << 20) == 0);
    for (long i = 0; i < 40000; i++)
        VLOG_WARN("filling the ring %ld with a long enough message", i);
    CHECK(pthread_create(&thread, NULL, crash_in_thread, NULL) == 0);
    wait_for_the_dump_to_start();
    child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        FILE *f;

        /* Holding none of the driver's pipes: it hears from the marker. */
        CHECK(freopen("/dev/null", "w", stdout) != NULL);
        CHECK(dup2(fileno(stdout), 2) == 2);
        VLOG_ERROR("the child logs an error");
        f = fopen(marker, "w");
        if (f != NULL) {
            fputs("the child logged\n", f);
            fclose(f);
        }
        _exit(0);
    }
    pause();
    return 9;
}

/* A signal the program ignored, which vlog took: dumped, then ignored. */
static int ignored(void)
{
    char outputs[600], *text;

    dump_path = getenv("DUMP_PATH");
    CHECK(dump_path != NULL);
    CHECK(vlog_init() == 0);
    CHECK(vlog_install_crash_handler() == 0);
    snprintf(outputs, sizeof outputs, "4:file:%s.log", dump_path);
    CHECK(vlog_set_outputs(outputs) == 0);
    VLOG_ERROR("before the trap");
    raise(SIGTRAP);
    VLOG_ERROR("after the trap");
    snprintf(outputs, sizeof outputs, "%s.log", dump_path);
    text = check_slurp_path(outputs);
    CHECK_HAS(text, " : before the trap\n");
    CHECK_HAS(text, " : after the trap\n");
    free(text);
    puts("went on");
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    if (strcmp(argv[1], "recover") == 0 || strcmp(argv[1], "recover-siginfo") == 0)
        return recover();
    alarm(30);
    if (strcmp(argv[1], "signal-chain") == 0)
        return signal_chain();
    if (strcmp(argv[1], "during-dump") == 0)
        return while_dumping(0);
    if (strcmp(argv[1], "fork-in-dump") == 0)
        return while_dumping(1);
    if (strcmp(argv[1], "fork-in-crash") == 0)
        return fork_in_crash();
    if (strcmp(argv[1], "ignored") == 0)
        return ignored();
    return 2;
}

/*
 * A program that logs with syslog(3) only, knowing nothing of vlog: the
 * tests run it with and without libvlog-syslog.so and compare what
 * reaches /dev/log, stderr and the ring.
 *
 *   syslog_calls calls     every form and option glibc has, once each
 *   syslog_calls signal    a SIGALRM handler that logs, 100 us after the
 *                          last one, while the main loop logs (then waits
 *                          for a line on stdin, so the test can ask the
 *                          control socket)
 *   syslog_calls threads   4 threads, 2000 messages each
 *   syslog_calls cancel    a thread with a cancel pending logs 3 messages:
 *                          the first is sent, and the cancel acts as it
 *                          returns
 *   syslog_calls fork      a message before fork, one from each side
 *   syslog_calls key       openlog and syslog from a thread-key destructor,
 *                          as the thread exits
 *   syslog_calls atexit    a message from an atexit handler
 *   syslog_calls restart   a message, then (after a line on stdin: the
 *                          syslog daemon was restarted) another
 *   syslog_calls handler   every signal reset to SIG_DFL, then a SIGSEGV
 *                          handler of its own installed, then a crash
 *   syslog_calls segv      a crash, with no handler of its own
 *   syslog_calls pri       LOG_AUTHPRIV|LOG_CRIT, LOG_LOCAL3|LOG_EMERG and
 *                          (openlog's LOG_DAEMON) LOG_NOTICE, one each
 *
 * Prints its pid first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

static void __attribute__((format(printf, 2, 3))) via_vsyslog(int pri, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsyslog(pri, fmt, ap);
    va_end(ap);
}

static void calls(void)
{
    static char ident[16] = "calls-a";
    char longer[3000];
    static char longest[10001];

    /* Before openlog: the program's name, LOG_USER, no pid. */
    syslog(LOG_WARNING, "before openlog %d", 1);
    openlog(ident, LOG_PID, LOG_DAEMON);
    syslog(LOG_INFO, "info with pid %s", "yes");
    errno = ENOENT;
    syslog(LOG_ERR, "errno kept for %%m: %m");
    /* The facility in the call wins over openlog's. */
    syslog(LOG_NOTICE | LOG_LOCAL3, "to local3");
    /* glibc reads the ident through the pointer at each message. */
    strcpy(ident, "calls-b");
    syslog(LOG_CRIT, "renamed in place");
    /* A NULL ident keeps the one before; a bad facility keeps openlog's. */
    openlog(NULL, 0, 0x7fff0000);
    syslog(LOG_EMERG, "no pid now, same ident");
    openlog("calls-c", LOG_PID | LOG_PERROR, LOG_AUTH);
    syslog(LOG_ALERT, "also on stderr");
    syslog(LOG_DEBUG, "ends in a newline\n");
    /* Unknown bits: glibc says so, then logs the message anyway. */
    syslog(LOG_INFO | 0x10000, "bad bits");
    /* setlogmask: 0 leaves it, the old mask comes back. */
    if (setlogmask(LOG_UPTO(LOG_NOTICE)) != 0xff)
        printf("unexpected first mask\n");
    if (setlogmask(0) != LOG_UPTO(LOG_NOTICE))
        printf("unexpected mask\n");
    syslog(LOG_INFO, "masked out");
    syslog(LOG_NOTICE, "not masked");
    setlogmask(0xff);
    /* Longer than the stack buffer; bytes glibc sends as they are. */
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    syslog(LOG_INFO, "long %s end", longer);
    /* Longer than a vlog message (8192 bytes): glibc sends it whole, vlog
     * cuts it with its marker. */
    memset(longest, 'y', sizeof longest - 1);
    syslog(LOG_INFO, "longest %s end", longest);
    syslog(LOG_INFO, "tab\there, escape \x1b[31m, quote \" and %s", "\xff\xfe");
    syslog(LOG_INFO, "%.3s of a precision", "abcdef");
    /* closelog forgets the ident, keeps the options and facility. */
    closelog();
    syslog(LOG_INFO, "after closelog");
    via_vsyslog(LOG_INFO, "through vsyslog %d", 7);
    errno = EBADF;
    syslog(LOG_INFO, "errno after: %m");
    printf("errno %d\n", errno);
}

static volatile sig_atomic_t in_handler, stopping;

/* The next alarm, 100 us after this handler ends: however slow the
 * machine (a busy one, valgrind), the main loop runs between two. */
static void arm_next(void)
{
    struct itimerval once = {{0, 0}, {0, 100}};
    setitimer(ITIMER_REAL, &once, NULL);
}

static void on_alarm(int sig)
{
    (void)sig;
    in_handler++;
    /* As sshd logs: openlog, syslog, closelog for every message. */
    openlog("calls-handler", LOG_PID, LOG_DAEMON);
    syslog(LOG_INFO, "from the signal handler %d", (int)in_handler);
    closelog();
    if (in_handler % 16 == 0)
        setlogmask(0xff);
    if (!stopping)
        arm_next();
}

static void signals(void)
{
    struct sigaction sa;
    struct itimerval off = {{0, 0}, {0, 0}};
    sigset_t block;
    char line[16];
    int i;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    openlog("calls-signal", 0, LOG_DAEMON);
    arm_next();
    for (i = 0; i < 20000; i++) {
        openlog("calls-signal", 0, LOG_DAEMON);
        syslog(LOG_INFO, "from the main loop %d", i);
        closelog();
    }
    /* A signal the timer raised before it stopped stays pending, not
     * handled after the count is read. */
    sigemptyset(&block);
    sigaddset(&block, SIGALRM);
    sigprocmask(SIG_BLOCK, &block, NULL);
    stopping = 1;
    setitimer(ITIMER_REAL, &off, NULL);
    printf("handled %d\n", (int)in_handler);
    fflush(stdout);
    if (fgets(line, sizeof line, stdin) == NULL)
        return;
}

static void *worker(void *arg)
{
    long n = (long)arg;
    int i;

    for (i = 0; i < 2000; i++)
        syslog(LOG_INFO, "thread %ld message %d", n, i);
    return NULL;
}

static void threads(void)
{
    pthread_t t[4];
    long i;

    openlog("calls-threads", 0, LOG_DAEMON);
    for (i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
}

static volatile int calls_returned;

static void *cancelled(void *arg)
{
    int i;

    (void)arg;
    pthread_cancel(pthread_self());
    for (i = 0; i < 3; i++) {
        syslog(LOG_INFO, "with a cancel pending %d", i);
        calls_returned++;
    }
    printf("not cancelled\n");
    return NULL;
}

static void cancels(void)
{
    pthread_t t;
    void *result;

    openlog("calls-cancel", 0, LOG_DAEMON);
    pthread_create(&t, NULL, cancelled, NULL);
    pthread_join(t, &result);
    printf("%s after %d calls returned\n",
           result == PTHREAD_CANCELED ? "cancelled" : "not cancelled", calls_returned);
}

static pthread_key_t key;

static void at_thread_exit(void *value)
{
    openlog("calls-key", 0, LOG_DAEMON);
    syslog(LOG_INFO, "from a key destructor: %s", (const char *)value);
    closelog();
}

static void *set_key(void *arg)
{
    (void)arg;
    pthread_setspecific(key, "exiting");
    syslog(LOG_INFO, "before the thread exits");
    return NULL;
}

static void keys(void)
{
    pthread_t t;

    pthread_key_create(&key, at_thread_exit);
    pthread_create(&t, NULL, set_key, NULL);
    pthread_join(t, NULL);
}

static void forks(void)
{
    pid_t child;
    int status;

    openlog("calls-fork", LOG_PID, LOG_DAEMON);
    syslog(LOG_INFO, "before fork");
    child = fork();
    if (child == 0) {
        syslog(LOG_INFO, "in the child");
        _exit(0);
    }
    waitpid(child, &status, 0);
    syslog(LOG_INFO, "in the parent, child %d", (int)child);
}

static void on_segv(int sig)
{
    static const char said[] = "the program's own handler ran\n";

    if (write(1, said, sizeof said - 1) < 0) {
        /* nothing to be done */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void crash(int own_handler)
{
    struct sigaction sa, old;
    int sig;

    if (own_handler) {
        /* As daemons do at their start: every signal back to its default. */
        for (sig = 1; sig < 32; sig++)
            if (sig != SIGKILL && sig != SIGSTOP)
                signal(sig, SIG_DFL);
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_segv;
        sigaction(SIGSEGV, &sa, &old);
        if (old.sa_handler != SIG_DFL)
            printf("the old handler was not SIG_DFL\n");
        sigaction(SIGSEGV, NULL, &old);
        if (old.sa_handler != on_segv)
            printf("the handler read back is not the program's\n");
        fflush(stdout);
    }
    openlog("calls-crash", LOG_PID, LOG_DAEMON);
    syslog(LOG_DEBUG, "the last message before the crash");
    *(volatile int *)(long)(sig = 0) = 1;
}

static void restarts(void)
{
    char line[16];

    openlog("calls-restart", LOG_PID, LOG_DAEMON);
    syslog(LOG_INFO, "before the restart");
    if (fgets(line, sizeof line, stdin) == NULL)
        return;
    syslog(LOG_INFO, "after the restart");
}

static void at_exit(void)
{
    syslog(LOG_INFO, "from atexit");
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "calls";

    printf("%d\n", (int)getpid());
    fflush(stdout);
    if (strcmp(mode, "calls") == 0)
        calls();
    else if (strcmp(mode, "signal") == 0)
        signals();
    else if (strcmp(mode, "threads") == 0)
        threads();
    else if (strcmp(mode, "fork") == 0)
        forks();
    else if (strcmp(mode, "cancel") == 0)
        cancels();
    else if (strcmp(mode, "key") == 0)
        keys();
    else if (strcmp(mode, "restart") == 0)
        restarts();
    else if (strcmp(mode, "atexit") == 0) {
        openlog("calls-atexit", 0, LOG_DAEMON);
        atexit(at_exit);
    } else if (strcmp(mode, "pri") == 0) {
        openlog("calls-pri", 0, LOG_DAEMON);
        syslog(LOG_AUTHPRIV | LOG_CRIT, "authpriv crit");
        syslog(LOG_LOCAL3 | LOG_EMERG, "local3 emerg");
        syslog(LOG_NOTICE, "daemon notice");
    } else if (strcmp(mode, "handler") == 0 || strcmp(mode, "segv") == 0) {
        crash(strcmp(mode, "handler") == 0);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}

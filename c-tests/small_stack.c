/* Every kind of logging call uses at most 8 KiB of its caller's stack,
 * however its line is written:
 *
 *   small_stack measure   a thread with a large stack makes each kind of
 *                         call over a painted stack, prints what each
 *                         used, and fails past 8 KiB
 *   small_stack min       the same calls from a thread whose stack is
 *                         PTHREAD_STACK_MIN, its first call among them
 *   small_stack check     a failed check over a painted stack: a SIGABRT
 *                         handler of the program's, on a stack of its own,
 *                         prints what the check used and exits (0, or 1
 *                         past 8 KiB)
 *
 * The driver runs both with the writer thread and with VLOG_WRITER=caller,
 * with file, JSON (?sync) and syslog outputs, and an error's context. */
#include "check.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

VLOG_INIT("test.stack");

#define BOUND (8 * 1024)
/* Left unpainted right below the measuring frame: the painting loop's own
 * room. */
#define GAP 512

static char big[8192];
static int failed;

/* The measuring thread's stack: memory of this program's, which it paints
 * and reads back (never a read of memory C does not give it). */
static unsigned char *stack;
static size_t stack_size = 1 << 20;
/* Where measure_one's measure starts (its frame, less GAP): for a failed
 * check, read after abort(3) by the program's SIGABRT handler. */
static size_t check_top;

/* Paints the stack below this frame (but GAP), calls `f`, and returns how
 * far below this frame `f` wrote. Inlined nowhere: its frame is where it
 * measures from, and the painting makes no call. */
__attribute__((noinline)) static size_t measure_one(void (*f)(void))
{
    volatile unsigned char *frame = (volatile unsigned char *)__builtin_frame_address(0);
    size_t top = (size_t)(frame - stack) - GAP, i = 0;

    check_top = top;

    for (size_t j = 0; j < top; j++)
        ((volatile unsigned char *)stack)[j] = 0xA5;
    f();
    while (i < top && ((volatile unsigned char *)stack)[i] == 0xA5)
        i++;
    return (size_t)(frame - stack) - i;
}

static void first(void)
{
    VLOG_INFO("the thread's first call %d", 1);
}

static void info(void)
{
    VLOG_INFO("an info line %d", 2);
}

static void error(void)
{
    VLOG_ERROR("an error line %d", 3);
}

static void fields(void)
{
    VLOG_FIELDS(VLOG_PRIO_ERROR,
                (VLOG_FIELD_STR("VM", "guest"), VLOG_FIELD_INT("VCPUS", 4),
                 VLOG_FIELD_STR("A_VERY_LONG_FIELD_NAME_THAT_GOES_ON_AND_ON", "x")),
                "an error with fields");
}

static void hexdump(void)
{
    VLOG_HEXDUMP(VLOG_PRIO_ERROR, big, 4096, "4 KiB of bytes at %p", (void *)big);
}

static void backtrace(void)
{
    VLOG_BACKTRACE(VLOG_PRIO_ERROR, "an error with its backtrace %d", 5);
}

static void large(void)
{
    VLOG_ERROR("an 8 KiB message %s", big);
}

static void context(void)
{
    for (int i = 0; i < 30; i++)
        VLOG_DEBUG("context record %d", i);
    VLOG_ERROR("an error with its context");
}

static const struct {
    const char *name;
    void (*call)(void);
} kinds[] = {
    {"first", first}, {"info", info},   {"error", error},
    {"fields", fields}, {"8k", large}, {"context", context},
    {"hexdump", hexdump}, {"backtrace", backtrace},
};

static void *measure(void *arg)
{
    (void)arg;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        size_t n = measure_one(kinds[k].call);

        printf("%s %zu\n", kinds[k].name, n);
        if (n > BOUND) {
            fprintf(stderr, "%s used %zu bytes of the caller's stack, over %d\n",
                    kinds[k].name, n, BOUND);
            failed = 1;
        }
    }
    return NULL;
}

/* After abort(3): how far below check_top the check wrote, read back from
 * the painted stack (this handler runs on a stack of its own). */
static void measured_abort(int sig)
{
    char line[64];
    size_t i = 0;
    int n;

    (void)sig;
    while (i < check_top && ((volatile unsigned char *)stack)[i] == 0xA5)
        i++;
    n = snprintf(line, sizeof line, "check %zu\n", check_top - i);
    if (write(1, line, (size_t)n) != n)
        _exit(2);
    _exit(check_top - i > BOUND);
}

static void failing_check(void)
{
    VLOG_CHECK(check_top == 0, "a failed check on a small stack %s", big);
}

static void *measure_check(void *arg)
{
    static unsigned char own[64 * 1024];
    stack_t alt = {.ss_sp = own, .ss_size = sizeof own};
    struct sigaction sa;

    (void)arg;
    CHECK(sigaltstack(&alt, NULL) == 0);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = measured_abort;
    sa.sa_flags = SA_ONSTACK;
    CHECK(sigaction(SIGABRT, &sa, NULL) == 0);
    measure_one(failing_check);
    return NULL;
}

static void *all_kinds(void *arg)
{
    (void)arg;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        kinds[k].call();
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_attr_t attr;
    pthread_t thread;
    int measuring;

    CHECK(argc == 2);
    measuring = strcmp(argv[1], "measure") == 0 || strcmp(argv[1], "check") == 0;
    CHECK(measuring || strcmp(argv[1], "min") == 0);
    memset(big, 'x', sizeof big - 1);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    CHECK(pthread_attr_init(&attr) == 0);
    if (measuring) {
        stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(stack != MAP_FAILED);
        CHECK(pthread_attr_setstack(&attr, stack, stack_size) == 0);
    } else {
        CHECK(pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN) == 0);
    }
    CHECK(pthread_create(&thread, &attr,
                         strcmp(argv[1], "check") == 0 ? measure_check
                         : measuring                   ? measure
                                                       : all_kinds,
                         NULL) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(vlog_flush() == 0);
    return failed;
}

/* Every C type a printf argument can have, captured by the macros as one
 * word each (C11: _Generic; C99 and C++: va_arg) and rendered later as glibc
 * renders it now; each argument evaluated once, whichever path the message
 * takes (deferred, formatted at the call, printed by an output). Run as
 * `capture ring` (ring only: deferred) and `capture printed` (an output
 * prints every message, so the text is made at the call). */
#include "check.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

VLOG_INIT("capture");

struct opaque; /* never defined: %p of a pointer to an incomplete type */

enum colour { RED, GREEN = 7 };

struct flags {
    unsigned small : 3;
    int negative : 5;
};

static char expected[64][256];
static int cases;
static int evaluated;

static int once(int v)
{
    evaluated++;
    return v;
}

/* Logs the message and keeps what snprintf makes of it, with a tag so the
 * dump's line can be found. */
#define CASE(fmt, ...)                                                        \
    do {                                                                      \
        snprintf(expected[cases], sizeof expected[0], "<%d> " fmt, cases,    \
                 __VA_ARGS__);                                                \
        VLOG_ERROR("<%d> " fmt, cases, __VA_ARGS__);                          \
        cases++;                                                              \
    } while (0)

int main(int argc, char **argv)
{
    struct flags fl = {5, -3};
    const char array[] = "an array";
    char buffer[16] = "a buffer";
    struct opaque *op = (struct opaque *)(uintptr_t)0x1234;
    const char *volatile nothing = NULL; /* kept from the compiler's checks */
    char *dump;
    int i, records;

    CHECK(argc == 2);
    if (strcmp(argv[1], "printed") == 0)
        CHECK(vlog_set_outputs("1:file:/dev/null") == 0);
    else
        CHECK(vlog_set_outputs("4:file:/dev/null") == 0);

    CASE("char %c %d %hhd", 'x', (char)-5, (char)100);
    CASE("signed char %d unsigned char %u", (signed char)-7, (unsigned char)250);
    CASE("short %hd unsigned short %hu", (short)-300, (unsigned short)65000);
    CASE("int %d %i unsigned %u %x", -42, INT32_MIN, 4000000000u, 0xdeadbeefu);
    CASE("long %ld unsigned long %lu", -1234567890123L, 18446744073709551615UL);
    CASE("long long %lld unsigned long long %llu", -9LL, 9ULL);
    CASE("size_t %zu ssize_t %zd", (size_t)12345, (ssize_t)-12345);
    CASE("intmax_t %jd uintmax_t %ju ptrdiff_t %td", (intmax_t)-1, (uintmax_t)2, (ptrdiff_t)-3);
    CASE("int as unsigned %u, as hex %x, as char-size %hhd", -1, -1, 300);
    CASE("bool %d enum %d %u", (bool)true, RED, GREEN);
    CASE("bit-fields %u %d", fl.small, fl.negative);
    CASE("float %f double %.3e %g %a", 1.5f, -2.25, 1e-5, 0.5);
    CASE("strings %s %s %s %.3s", "literal", array, buffer, "truncated");
    CASE("null string %s", nothing);
    CASE("pointers %p %p %p", (void *)op, (const void *)array, (void *)NULL);
    CASE("star %*d|%-*d|%.*s", 6, 42, 4, 7, 2, "abc");
    CASE("uint8_t %u uint16_t %u int64_t %lld", (uint8_t)200, (uint16_t)60000, (long long)INT64_MIN);

    /* Each argument evaluated once: deferred, formatted at the call
     * (long double is not deferred), and in a string's precision. */
    evaluated = 0;
    VLOG_ERROR("once %d %d", once(1), once(2));
    CHECK(evaluated == 2);
    VLOG_ERROR("once at the call %d %Lf", once(3), (long double)1.5);
    CHECK(evaluated == 3);
    VLOG_ERROR("once precision %.*s", once(2), "abc");
    CHECK(evaluated == 4);

    dump = check_dump(&records);
    CHECK(strstr(dump, "damaged") == NULL);
    CHECK(strstr(dump, "do not match") == NULL);
    for (i = 0; i < cases; i++) {
        char line[300];
        snprintf(line, sizeof line, ": %s\n", expected[i]);
        if (strstr(dump, line) == NULL) {
            fprintf(stderr, "expected the line ending %s", line);
            fprintf(stderr, "in the dump:\n%s", dump);
            exit(1);
        }
    }
    CHECK(strstr(dump, ": once 1 2\n") != NULL);
    CHECK(strstr(dump, ": once at the call 3 1.500000\n") != NULL);
    CHECK(strstr(dump, ": once precision ab\n") != NULL);
    free(dump);
    puts("ok");
    return 0;
}

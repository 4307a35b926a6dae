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

/* Wider than int: GCC gives each a type of its own (`unsigned long:40`),
 * which no _Generic association names. */
struct wide {
    unsigned long a : 40;
    long b : 33;
    unsigned long long c : 63;
};

/* __int128 has no printf conversion: the C11 capture records the
 * documented marker (C99 and C++ fetch what the format says, as printf). */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus) && \
    defined(__SIZEOF_INT128__)
#define WITH_INT128 1
#else
#define WITH_INT128 0
#endif

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
    struct wide wd = {0x12345678ffUL, -5, 0x7fffffffffffffffULL};
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
    /* GCC's -Wformat names the bit-fields' own types, and arguments beyond
     * the format's, legal C, evaluated and ignored, are -Wformat-extra-args. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-extra-args"
    CASE("wide bit-fields %lx %ld %llx", wd.a, wd.b, wd.c);
    CASE("arguments beyond the format %d", 1, 2.5, "three", (void *)op);
    errno = ENOENT;
    CASE("open failed: %m (%s)", "path", -1);
#pragma GCC diagnostic pop

    /* Each argument evaluated once: deferred, formatted at the call
     * (long double is not deferred), and in a string's precision. */
    evaluated = 0;
    VLOG_ERROR("once %d %d", once(1), once(2));
    CHECK(evaluated == 2);
    VLOG_ERROR("once at the call %d %Lf", once(3), (long double)1.5);
    CHECK(evaluated == 3);
    VLOG_ERROR("once precision %.*s", once(2), "abc");
    CHECK(evaluated == 4);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-extra-args"
    VLOG_ERROR("once beyond the format %d", once(5), once(6));
#pragma GCC diagnostic pop
    CHECK(evaluated == 6);
#if WITH_INT128
    {
        __extension__ __int128 big = 5;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat"
        VLOG_ERROR("int128 %d", big);
#pragma GCC diagnostic pop
    }
#endif

    dump = check_dump(&records);
    CHECK(strstr(dump, "damaged") == NULL);
#if WITH_INT128
    CHECK(strstr(dump, ": [arguments do not match the format, not rendered] int128 %d\n") != NULL);
    *strstr(dump, "do not match") = 'D';
#endif
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
    CHECK(strstr(dump, ": once beyond the format 5\n") != NULL);
    free(dump);
    puts("ok");
    return 0;
}

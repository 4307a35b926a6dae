/* Compiled as C99, C11 and C++ with -Wall -Wextra -Wpedantic -Werror: the header
 * must be clean in all of them. Uses every macro once. */
#include <vlog.h>

VLOG_INIT("header.check");

#ifdef __cplusplus
/* Sites in an inline function, a lambda and a template beside the plain
 * ones below: one file, one build. */
inline int in_inline(int n)
{
    VLOG_WARN("inline %d", n);
    return n;
}
template <typename T> T in_template(T n)
{
    VLOG_WARN_ONCE("template %d", (int)n);
    return n;
}
static int cxx_sites(int n)
{
    auto lambda = [](int m) { VLOG_INFO_EVERY_N(2, "lambda %d", m); return m; };
    return in_inline(n) + in_template(n) + lambda(n);
}
#else
static int cxx_sites(int n)
{
    return n;
}
#endif

int header_check(int n);
int header_check(int n)
{
    VLOG_DEBUG("plain");
    VLOG_INFO("%d", n);
    VLOG_WARN("%s %d", "two", n);
    VLOG_ERROR("error");
    VLOG(n, "runtime %d", n);
    VLOG_DEBUG_ONCE("once %d", n);
    VLOG_ERROR_EVERY_N(3, "every third %d", n);
    VLOG_WARN_RATELIMITED("limited %d", n);
    VLOG_LIMITED(VLOG_PRIO_INFO, 5, 60, "five a minute %d", n);
    return VLOG_ENABLED(&vlog__source, VLOG_PRIO_ERROR) + VLOG_ON(VLOG_PRIO_DEBUG) +
           vlog(NULL, VLOG_PRIO_INFO, __FILE__, __LINE__, __func__, "x %d", n) +
           cxx_sites(n) * 0;
}

int main(void)
{
    return header_check(1) < 0;
}

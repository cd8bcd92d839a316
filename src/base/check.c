#include "base/check.h"
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>

void check_violated(const char *invariant, const char *fmt, ...)
{
    char detail[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    log_fatal("invariant violated: %s: %s", invariant, detail);
}

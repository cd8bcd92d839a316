/*
 * linkage.c — whether the program is statically linked (linkage.h).
 */
#include "base/linkage.h"

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>

bool linkage_program_is_static(void)
{
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
    unsigned long n = getauxval(AT_PHNUM);
    if (!ph)
        return false;   /* no auxiliary vector to tell: assume the common case */
    for (unsigned long i = 0; i < n; i++)
        if (ph[i].p_type == PT_INTERP)
            return false;
    return true;
}

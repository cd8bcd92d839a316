/*
 * wrap_main.c — libdsm-start.a: master-only start for a program linked with
 * -Wl,--wrap=main (dsmcc does both). The C runtime calls __wrap_main in
 * main's stead; the linker turns __real_main into the program's main.
 * This object is linked into the executable (a shared library's reference
 * to __real_main would not be rewritten), and it holds no state.
 */
#include <dsm.h>

int __real_main(int argc, char **argv, char **envp);

int __wrap_main(int argc, char **argv, char **envp)
{
    return dsm_main(argc, argv, envp, __real_main);
}

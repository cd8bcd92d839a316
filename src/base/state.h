/*
 * state.h — where the library keeps its mutable globals.
 *
 * Fork style copies the master's global variables (.data and .bss) to the
 * other nodes at dsm_create. dsm's own state must not travel with them:
 * every mutable global of the library is declared DSM_STATE, which puts it
 * in a section of its own that the copy skips.
 */
#ifndef DSM_BASE_STATE_H
#define DSM_BASE_STATE_H
#define DSM_STATE __attribute__((section("dsm_state")))
#endif

// The embedded recorder, compiled into the interposer as part of this file so that the fork handler below can
// reach its private state (the plugin builds with -DRLREC_ALLOC_MMAP: thread buffers come from mmap).
#include "CRecorder.c"

#include "interposer.h"

/// The child's half of fork: the recorder's state is a copy of the parent's (its buffers, the parent's unwritten
/// packets, a registry lock that a parent thread may have held). The parent writes those packets; the child
/// forgets them without writing or waiting for threads it does not have.
void rli_recorder_forget_after_fork(void) {
    pthread_mutex_init(&g_registry_lock, NULL);
    uint64_t state = atomic_load(&g_hot.state);
    // A new generation that is not recording: every copied buffer's tag is stale, so this thread's t_buffer
    // (still pointing at its copy) is never written again, and rlrec_start may run.
    atomic_store(&g_hot.state, ((state >> 1) + 1) << 1);
    for (uint32_t i = 0; i < g_buffer_count; i++) free_buffer_memory(g_buffers[i]);
    g_buffer_count = 0;
}

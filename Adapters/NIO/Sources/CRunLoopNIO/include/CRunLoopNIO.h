#ifndef CRUNLOOPNIO_H
#define CRUNLOOPNIO_H

#include <stdint.h>

/* What the calling thread's SwiftNIO event loop has told the installed sink. Only that thread reads or writes it
 * (NIO calls the metrics delegate and the channel handlers on the loop's own thread). */
typedef struct rlnio_thread_state {
    /* The loop's trace id (0 until first needed), kept across sinks as RunLoopCore keeps its loops' ids. */
    uint64_t loop_id;
    /* The sink the loop was last announced to (its object's address), 0 for none. */
    uintptr_t announced_sink;
    /* The group the loop belongs to, from its metrics delegate's first tick (0 until then). */
    uint64_t group_id;
    /* Ticks reported so far: the iteration number of the loop's stall reports (loop_stall). */
    uint64_t ticks;
    /* Set on the loops of a group NIOLoopTracing.makeEventLoopGroup made with no sink installed: the adapter
     * steps aside there, and its channel handlers remove themselves. */
    int untraced;
} rlnio_thread_state;

/* The calling thread's state (zeroed on a new thread). */
rlnio_thread_state *rlnio_current_thread_state(void);

/* The calling thread's kernel id. */
int32_t rlnio_gettid(void);

/* The calling thread's name (NIO-ELT-0-#1) into buffer, NUL-terminated; 0 on success. */
int rlnio_thread_name(char *buffer, int capacity);

#endif

// libdispatch's main-queue hooks for run loops (the ones CoreFoundation's CFRunLoop uses on Linux), for
// RunLoopCore/MainQueue only. Included by CRunLoopLinux.h.
#ifndef CRL_MAIN_QUEUE_H
#define CRL_MAIN_QUEUE_H

/// The main dispatch queue's eventfd (`_dispatch_get_main_queue_handle_4CF`, created by libdispatch on first
/// call): libdispatch writes it when main-queue work arrives and nobody reads it but the run loop. -1 when
/// libdispatch is not loaded or lacks the hooks; then there is no main-queue work to serve.
int crl_main_queue_handle(void);

/// Runs the main queue's work queued so far (`_dispatch_main_queue_callback_4CF`), on the main thread. Work
/// queued meanwhile is left for the next call (libdispatch writes the eventfd again for it); a call from inside
/// a call returns at once. Only after crl_main_queue_handle() returned a descriptor.
void crl_main_queue_drain(void);

#endif /* CRL_MAIN_QUEUE_H */

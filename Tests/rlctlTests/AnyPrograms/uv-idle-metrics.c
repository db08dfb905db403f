// A libuv loop as Node runs it, with idle-time metrics on (UV_METRICS_IDLE_TIME: libuv checks with a zero timeout
// before each blocking wait): a 5 ms repeating timer, stopped after TICKS firings. A prepare handle runs once per
// loop iteration: their count, libuv's own, goes to COUNT_FILE as "iterations N".
//   uv-idle-metrics TICKS COUNT_FILE
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

static unsigned long iterations, ticks, wanted;

static void prepared(uv_prepare_t *handle) {
    (void)handle;
    iterations++;
}

static void fired(uv_timer_t *timer) {
    if (++ticks == wanted) {
        uv_timer_stop(timer);
        uv_close((uv_handle_t *)timer, NULL);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    wanted = strtoul(argv[1], NULL, 10);
    uv_loop_t *loop = uv_default_loop();
    if (uv_loop_configure(loop, UV_METRICS_IDLE_TIME) != 0) return 3;
    uv_prepare_t prepare;
    uv_prepare_init(loop, &prepare);
    uv_prepare_start(&prepare, prepared);
    uv_unref((uv_handle_t *)&prepare);   // the timer alone keeps the loop running
    uv_timer_t timer;
    uv_timer_init(loop, &timer);
    uv_timer_start(&timer, fired, 5, 5);
    uv_run(loop, UV_RUN_DEFAULT);
    FILE *out = fopen(argv[2], "w");
    if (!out) return 4;
    fprintf(out, "iterations %lu\n", iterations);
    return fclose(out) == 0 ? 0 : 4;
}

/* The queue figure's app in C (ba/app.h): COUNT scheduleDownload calls, one at a time (each durable when it
 * returns), then FETCHES fetchCurrentDownloads on that queue, each timed. Prints "c.schedule MS" and "c.fetch MS"
 * lines for Benchmarks/table.py. Usage: bench_app_c COUNT URL FETCHES (run through bahost launch). */
#include <ba/app.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void count(void *context, const ba_download_t *download) {
    (void)download;
    ++*(long *)context;
}

int main(int argc, char **argv) {
    if (argc != 4) return fprintf(stderr, "usage: bench_app_c COUNT URL FETCHES\n"), 64;
    long total = atol(argv[1]), fetches = atol(argv[3]);
    ba_app_options_t options = {.struct_size = sizeof options};
    ba_app_t *app;
    ba_error_t error = {.struct_size = sizeof error};
    if (!ba_app_connect(&options, &app, &error)) return fprintf(stderr, "%s\n", error.message), 1;
    char identifier[64], url[4096];
    unsigned tag = (unsigned)time(NULL);
    double start = now_ms();
    for (long i = 0; i < total; i++) {
        snprintf(identifier, sizeof identifier, "c-%u-%ld", tag, i);
        snprintf(url, sizeof url, "%s?%ld", argv[2], i);
        ba_download_t download = {.struct_size = sizeof download, .identifier = identifier, .url = url,
                                  .application_group_identifier = "group.com.example.levels", .file_size = 65536,
                                  .priority = BA_DOWNLOAD_PRIORITY_DEFAULT};
        if (!ba_app_schedule_download(app, &download, &error))
            return fprintf(stderr, "schedule %ld: %s\n", i, error.message), 1;
    }
    printf("c.schedule %.3f\n", now_ms() - start);
    for (long i = 0; i < fetches; i++) {
        long found = 0;
        start = now_ms();
        if (!ba_app_fetch_current_downloads(app, count, &found, &error)) return fprintf(stderr, "%s\n", error.message), 1;
        double elapsed = now_ms() - start;
        if (found < total) return fprintf(stderr, "fetch returned %ld downloads, not %ld\n", found, total), 1;
        printf("c.fetch %.3f\n", elapsed);
    }
    ba_app_disconnect(app);
    return 0;
}

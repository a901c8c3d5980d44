/*
 * The durable floor for many small files: only the work a downloader that keeps bahost's promise cannot avoid.
 * Each file is fetched (libcurl's multi interface, PARALLEL transfers on one thread, as curl --parallel does),
 * written as it arrives, synced (fsync, on a pool of PARALLEL threads, as the suite's `sync` of curl's files is),
 * renamed into place, and recorded by one row in an SQLite queue (WAL, synchronous=NORMAL, a transaction per
 * file: bahost's settings) before it counts as done.
 *
 *   durable_floor URLS OUTDIR DATABASE [PARALLEL]     URLS: one URL a line; files are OUTDIR/1.bin, 2.bin, ...
 *
 * Prints nothing on success; exits 1 with a message on the first failure.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_PARALLEL = 64 };

struct file {
    int index;
    int fd;
    struct file *next;
};

static char **urls;
static int url_count;
static const char *outdir;
static sqlite3 *db;
static sqlite3_stmt *insert;
static pthread_mutex_t db_lock = PTHREAD_MUTEX_INITIALIZER;

/* Files whose body has ended, waiting for a sync thread. */
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_ready = PTHREAD_COND_INITIALIZER;
static struct file *queue_head, *queue_tail;
static int fetching_done;

static void fail(const char *what) {
    fprintf(stderr, "durable_floor: %s: %s\n", what, errno ? strerror(errno) : "failed");
    exit(1);
}

static size_t write_body(char *data, size_t size, size_t count, void *user) {
    struct file *file = user;
    size_t total = size * count, written = 0;
    while (written < total) {
        ssize_t n = write(file->fd, data + written, total - written);
        if (n < 0) {
            if (errno == EINTR) continue;
            return 0;
        }
        written += (size_t)n;
    }
    return total;
}

static void path_of(char *buffer, size_t size, int index, const char *suffix) {
    snprintf(buffer, size, "%s/%d.bin%s", outdir, index + 1, suffix);
}

static void *sync_files(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&queue_lock);
        while (!queue_head && !fetching_done) pthread_cond_wait(&queue_ready, &queue_lock);
        struct file *file = queue_head;
        if (file) {
            queue_head = file->next;
            if (!queue_head) queue_tail = NULL;
        }
        pthread_mutex_unlock(&queue_lock);
        if (!file) return NULL;

        char partial[4096], final[4096];
        path_of(partial, sizeof partial, file->index, ".partial");
        path_of(final, sizeof final, file->index, "");
        if (fsync(file->fd) != 0) fail("fsync");
        close(file->fd);
        if (rename(partial, final) != 0) fail("rename");

        pthread_mutex_lock(&db_lock);
        sqlite3_bind_int(insert, 1, file->index);
        sqlite3_bind_text(insert, 2, final, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(insert) != SQLITE_DONE) fail(sqlite3_errmsg(db));
        sqlite3_reset(insert);
        pthread_mutex_unlock(&db_lock);
        free(file);
    }
}

static void start(CURLM *multi, int index) {
    struct file *file = calloc(1, sizeof *file);
    char partial[4096];
    path_of(partial, sizeof partial, index, ".partial");
    file->index = index;
    file->fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (file->fd < 0) fail(partial);
    CURL *easy = curl_easy_init();
    curl_easy_setopt(easy, CURLOPT_URL, urls[index]);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, file);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, file);
    curl_easy_setopt(easy, CURLOPT_FAILONERROR, 1L);
    curl_multi_add_handle(multi, easy);
}

static void read_urls(const char *path) {
    FILE *input = fopen(path, "r");
    if (!input) fail(path);
    char line[8192];
    int capacity = 0;
    while (fgets(line, sizeof line, input)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0]) continue;
        if (url_count == capacity) {
            capacity = capacity ? 2 * capacity : 1024;
            urls = realloc(urls, capacity * sizeof *urls);
        }
        urls[url_count++] = strdup(line);
    }
    fclose(input);
}

static void open_queue(const char *path) {
    if (sqlite3_open(path, &db) != SQLITE_OK) fail(sqlite3_errmsg(db));
    const char *schema = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                         "CREATE TABLE IF NOT EXISTS finished (id INTEGER PRIMARY KEY, path TEXT NOT NULL);";
    if (sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK) fail(sqlite3_errmsg(db));
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO finished (id, path) VALUES (?, ?)", -1, &insert, NULL)
        != SQLITE_OK)
        fail(sqlite3_errmsg(db));
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: durable_floor URLS OUTDIR DATABASE [PARALLEL]\n");
        return 2;
    }
    read_urls(argv[1]);
    outdir = argv[2];
    open_queue(argv[3]);
    int parallel = argc > 4 ? atoi(argv[4]) : 16;
    if (parallel < 1 || parallel > MAX_PARALLEL) parallel = 16;

    pthread_t syncers[MAX_PARALLEL];
    for (int i = 0; i < parallel; i++) pthread_create(&syncers[i], NULL, sync_files, NULL);

    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)parallel);
    int next = 0, running = 0;
    for (; next < url_count && next < parallel; next++) start(multi, next);
    do {
        curl_multi_perform(multi, &running);
        CURLMsg *message;
        int left;
        while ((message = curl_multi_info_read(multi, &left))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            struct file *file;
            curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&file);
            if (message->data.result != CURLE_OK) {
                fprintf(stderr, "durable_floor: %s: %s\n", urls[file->index], curl_easy_strerror(message->data.result));
                return 1;
            }
            curl_multi_remove_handle(multi, easy);
            curl_easy_cleanup(easy);
            pthread_mutex_lock(&queue_lock);
            if (queue_tail) queue_tail->next = file; else queue_head = file;
            queue_tail = file;
            pthread_cond_signal(&queue_ready);
            pthread_mutex_unlock(&queue_lock);
            if (next < url_count) {
                start(multi, next++);
                running++;
            }
        }
        if (running) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    } while (running || next < url_count);
    curl_multi_cleanup(multi);

    pthread_mutex_lock(&queue_lock);
    fetching_done = 1;
    pthread_cond_broadcast(&queue_ready);
    pthread_mutex_unlock(&queue_lock);
    for (int i = 0; i < parallel; i++) pthread_join(syncers[i], NULL);
    sqlite3_finalize(insert);
    sqlite3_close(db);
    return 0;
}

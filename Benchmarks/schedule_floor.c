/*
 * The floor for scheduleDownload: only the work a service that keeps bahost's promise cannot avoid for one call.
 * An app process sends each request over a Unix stream socket and waits for its answer; the service process, for
 * each request, checks in one transaction that no active download of the app has that identifier (Apple's
 * "already scheduled"), inserts the download's row, commits (WAL, synchronous=NORMAL: bahost's settings), and only
 * then answers, so that an answered call survives the service being killed.
 *
 * The row is bahost's: the table and its indexes are copied from TEMPLATE (a queue database bahost made), so the
 * floor follows the schema as it grows. Columns are bound by name where the row's meaning needs it (a random unique
 * identifier, the app, the sequence, the identifier, the URL, the state), and with a neutral value otherwise.
 *
 *   schedule_floor TEMPLATE DATABASE COUNT URL     prints "schedule-floor MILLISECONDS"
 *
 * Exits 1 with a message on the first failure.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_COLUMNS = 64, MAX_REQUEST = 4096 };

static const char *app = "com.example.bench";

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "schedule_floor: %s: %s\n", what, detail ? detail : (errno ? strerror(errno) : "failed"));
    exit(1);
}

static void exec(sqlite3 *db, const char *sql) {
    char *message = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &message) != SQLITE_OK) fail(sql, message);
}

static void send_all(int fd, const void *data, size_t size) {
    const char *bytes = data;
    while (size > 0) {
        ssize_t n = send(fd, bytes, size, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail("send", NULL);
        bytes += n;
        size -= (size_t)n;
    }
}

/* Reads one frame (a 4-byte length, then the body) into buffer; returns its length, or -1 at the end. */
static int receive_frame(int fd, char *buffer) {
    uint32_t length;
    size_t got = 0;
    while (got < 4) {
        ssize_t n = recv(fd, (char *)&length + got, 4 - got, 0);
        if (n == 0 && got == 0) return -1;
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail("recv", NULL);
        got += (size_t)n;
    }
    if (length > MAX_REQUEST) fail("recv", "frame too long");
    for (got = 0; got < length;) {
        ssize_t n = recv(fd, buffer + got, length - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail("recv", NULL);
        got += (size_t)n;
    }
    return (int)length;
}

static void send_frame(int fd, const char *body, uint32_t length) {
    char frame[4 + MAX_REQUEST];
    memcpy(frame, &length, 4);
    memcpy(frame + 4, body, length);
    send_all(fd, frame, 4 + length);
}

/* The service: the template's download table and indexes in DATABASE, then one transaction per request. */
static void serve(int fd, const char *template_path, const char *path) {
    sqlite3 *db, *template;
    if (sqlite3_open(path, &db) != SQLITE_OK) fail(path, sqlite3_errmsg(db));
    exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -1024");
    if (sqlite3_open_v2(template_path, &template, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        fail(template_path, sqlite3_errmsg(template));
    sqlite3_stmt *schema;
    if (sqlite3_prepare_v2(template,
            "SELECT sql FROM sqlite_master WHERE tbl_name = 'download' AND sql IS NOT NULL ORDER BY type = 'index'",
            -1, &schema, NULL) != SQLITE_OK)
        fail("template", sqlite3_errmsg(template));
    int statements = 0;
    while (sqlite3_step(schema) == SQLITE_ROW) {
        const char *sql = (const char *)sqlite3_column_text(schema, 0);
        /* The app table the download table references is not needed: foreign keys are off, as in bahost. */
        exec(db, sql);
        statements++;
    }
    sqlite3_finalize(schema);
    if (statements == 0) fail(template_path, "no download table");

    /* One parameter per column, in the table's order, with what each needs (see the file's comment). */
    char names[MAX_COLUMNS][64];
    int notnull[MAX_COLUMNS], integer[MAX_COLUMNS], columns = 0;
    sqlite3_stmt *info;
    sqlite3_prepare_v2(template, "SELECT name, type, \"notnull\" FROM pragma_table_info('download')", -1, &info, NULL);
    char insert_sql[4096] = "INSERT INTO download VALUES (";
    while (sqlite3_step(info) == SQLITE_ROW && columns < MAX_COLUMNS) {
        snprintf(names[columns], sizeof names[columns], "%s", (const char *)sqlite3_column_text(info, 0));
        const char *type = (const char *)sqlite3_column_text(info, 1);
        integer[columns] = strcasecmp(type, "INTEGER") == 0 || strcasecmp(type, "BOOLEAN") == 0
            || strcasecmp(type, "DOUBLE") == 0;
        notnull[columns] = sqlite3_column_int(info, 2);
        strcat(insert_sql, columns == 0 ? "?" : ", ?");
        columns++;
    }
    strcat(insert_sql, ")");
    sqlite3_finalize(info);
    sqlite3_close(template);

    sqlite3_stmt *active, *insert, *begin, *commit;
    if (sqlite3_prepare_v2(db,
            "SELECT 1 FROM download WHERE appIdentifier = ? AND identifier = ? "
            "AND state IN ('queued', 'downloading', 'waitingToRetry', 'waitingForNetwork') LIMIT 1",
            -1, &active, NULL) != SQLITE_OK
        || sqlite3_prepare_v2(db, insert_sql, -1, &insert, NULL) != SQLITE_OK
        || sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, NULL) != SQLITE_OK
        || sqlite3_prepare_v2(db, "COMMIT", -1, &commit, NULL) != SQLITE_OK)
        fail("prepare", sqlite3_errmsg(db));

    char request[MAX_REQUEST + 1];
    int length;
    long long sequence = 0;
    while ((length = receive_frame(fd, request)) >= 0) {
        request[length] = 0;
        /* The request: "IDENTIFIER URL". */
        char *url = strchr(request, ' ');
        if (!url) fail("request", "no URL");
        *url++ = 0;
        sqlite3_step(begin);
        sqlite3_reset(begin);
        sqlite3_bind_text(active, 1, app, -1, SQLITE_STATIC);
        sqlite3_bind_text(active, 2, request, -1, SQLITE_STATIC);
        int found = sqlite3_step(active) == SQLITE_ROW;
        sqlite3_reset(active);
        if (!found) {
            char unique[37];
            unsigned char random[16];
            sqlite3_randomness(sizeof random, random);
            for (int i = 0, o = 0; i < 16; i++) {
                if (i == 4 || i == 6 || i == 8 || i == 10) unique[o++] = '-';
                o += sprintf(unique + o, "%02X", random[i]);
            }
            sequence++;
            for (int c = 0; c < columns; c++) {
                const char *name = names[c];
                int p = c + 1;
                if (strcmp(name, "uniqueIdentifier") == 0) sqlite3_bind_text(insert, p, unique, -1, SQLITE_TRANSIENT);
                else if (strcmp(name, "appIdentifier") == 0) sqlite3_bind_text(insert, p, app, -1, SQLITE_STATIC);
                else if (strcmp(name, "sequence") == 0) sqlite3_bind_int64(insert, p, sequence);
                else if (strcmp(name, "identifier") == 0) sqlite3_bind_text(insert, p, request, -1, SQLITE_STATIC);
                else if (strcmp(name, "url") == 0) sqlite3_bind_text(insert, p, url, -1, SQLITE_STATIC);
                else if (strcmp(name, "host") == 0) sqlite3_bind_text(insert, p, "127.0.0.1", -1, SQLITE_STATIC);
                else if (strcmp(name, "state") == 0) sqlite3_bind_text(insert, p, "queued", -1, SQLITE_STATIC);
                else if (!notnull[c]) sqlite3_bind_null(insert, p);
                else if (integer[c]) sqlite3_bind_int(insert, p, 0);
                else sqlite3_bind_text(insert, p, "", -1, SQLITE_STATIC);
            }
            if (sqlite3_step(insert) != SQLITE_DONE) fail("insert", sqlite3_errmsg(db));
            sqlite3_reset(insert);
        }
        if (sqlite3_step(commit) != SQLITE_DONE) fail("commit", sqlite3_errmsg(db));
        sqlite3_reset(commit);
        send_frame(fd, found ? "100" : "0", found ? 3 : 1);
    }
    sqlite3_close(db);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: schedule_floor TEMPLATE DATABASE COUNT URL\n");
        return 2;
    }
    int count = atoi(argv[3]);
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) fail("socketpair", NULL);
    pid_t service = fork();
    if (service < 0) fail("fork", NULL);
    if (service == 0) {
        close(pair[0]);
        serve(pair[1], argv[1], argv[2]);
        _exit(0);
    }
    close(pair[1]);
    /* The service is ready once it answers a first call, which is not timed (as the app's own first call). */
    char request[MAX_REQUEST], reply[MAX_REQUEST];
    int length = snprintf(request, sizeof request, "warm-up %s", argv[4]);
    send_frame(pair[0], request, (uint32_t)length);
    if (receive_frame(pair[0], reply) < 0) fail("service", "ended");
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < count; i++) {
        length = snprintf(request, sizeof request, "bench-%d %s", i, argv[4]);
        send_frame(pair[0], request, (uint32_t)length);
        int n = receive_frame(pair[0], reply);
        if (n != 1 || reply[0] != '0') fail("schedule", "refused");
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    close(pair[0]);
    int status;
    waitpid(service, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("service", "failed");
    printf("schedule-floor %.3f\n", (end.tv_sec - start.tv_sec) * 1e3 + (end.tv_nsec - start.tv_nsec) / 1e6);
    return 0;
}
